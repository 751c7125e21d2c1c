"""``RemoteBackend``: the backend interface over the memory service (``active-memory server``).

A host on another machine holds a token issued for its tenant and repository, and talks to the
service over HTTPS (plain ``http://`` is accepted for a loopback address only, for tests and a
service on the same machine). The service derives the scope from the token; the run identity
sent along only has to agree with it. Answers are read up to ``max_response_bytes`` and
validated before anything is returned: a snapshot arrives as the stored rows, each verified
against its writer's checksum, and each lesson is decoded (validated completely) on first read,
as from a local store; any failure raises SnapshotError, never a shorter set. A publication
whose answer is lost (the connection dropped after the request was sent) raises StoreError
saying the outcome is unknown: take a new snapshot and decide again, the expected revisions
make a blind retry safe.

The service screens every draft of a publication itself (``PublicationControl.screened_by`` is
not sent: a client's claim is never trusted); a refusal comes back as ScreenRefused naming each
draft's id and codes.

Errors map back to the exception tree as the table in ``store/wire.py`` says
(``store/wire_errors.py``, beside the service's way there). The requests go out through the
standard library's ``http.client`` (``store/service_http.py`` says why), or through httpx when
the environment names a proxy or a test passes a transport.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from active_memory.errors import (
    ConfigError,
    LessonNotFound,
    LessonValidationError,
    PublicationError,
    PublicationFenced,
    ScopeRefused,
    SnapshotError,
    StoreError,
)
from active_memory.models.base import Model
from active_memory.models.changes import Publication
from active_memory.models.lessons import Lesson
from active_memory.store.admin_wire import (
    ApproveBody,
    ExportAnswer,
    HeldAnswer,
    HeldCountAnswer,
    HeldWire,
    HistoriesAnswer,
    HistoriesBody,
    HoldBody,
    ImportBody,
    LessonAnswer,
    LessonIdBody,
    LessonPageAnswer,
    LessonPageBody,
    RejectAnswer,
    RetiredAnswer,
    RetiredPageAnswer,
    RetiredPageBody,
)
from active_memory.store.backend import (
    PublicationControl,
    PublicationReceipt,
    Snapshot,
    SnapshotRequest,
)
from active_memory.store.checked_rows import StoredLessons, verify_snapshot_rows
from active_memory.store.closing import Closing
from active_memory.store.codec import DecodedRows
from active_memory.store.engine import REVIEW_RUN
from active_memory.store.listing import LessonListing, LessonSort, RetiredListing
from active_memory.store.quarantine_rows import QuarantineEntry
from active_memory.store.results import (
    DEFAULT_LIMITS,
    HistoryEntry,
    ImportReport,
    PurgeReceipt,
    Tombstone,
)
from active_memory.store.service_http import AnswerLost, AnswerTooLarge, Unreached, open_exchange
from active_memory.store.wire import (
    API_PREFIX,
    ErrorAnswer,
    GenerationAnswer,
    HistoryAnswer,
    HistoryBody,
    LessonsAnswer,
    PublishBody,
    PurgeBody,
    ReceiptAnswer,
    RevertBody,
    SnapshotAnswer,
    SnapshotBody,
)
from active_memory.store.wire_errors import raised_for

if TYPE_CHECKING:
    import httpx

__all__ = ["RemoteBackend", "check_service_url"]

M = TypeVar("M", bound=Model)


class _RouteMissing(StoreError):
    """A route newer than the service answered 404 (the client then does without it)."""


DEFAULT_MAX_RESPONSE_BYTES = 96 * 1024 * 1024
DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024  # the service's default limit


def check_service_url(url: str) -> str:
    """``url`` without a trailing slash; ConfigError unless https, or http on loopback."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigError("backend", f"{url!r} is not an https:// URL of the memory service")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError("backend", "the service URL carries no credentials, query or fragment")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ConfigError(
            "backend",
            f"{url!r} is plain http to a host that is not loopback; use https:// so the token "
            "and the lessons are not sent in clear",
        )
    return url.rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RemoteBackend(Closing):
    """``ActiveMemoryBackend`` (and history, revert, purge) over the memory service at ``url``.

    ``ca_file`` trusts a private certificate authority (PEM) instead of the ones httpx trusts
    (certifi's, or ``SSL_CERT_FILE``); ``transport`` is httpx's seam for tests (the requests
    then go through httpx); ``timeout_s`` bounds connecting, each read and each write.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str,
        timeout_s: float = 30.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        ca_file: str | os.PathLike[str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = check_service_url(url)
        if not token or not token.isascii() or not token.isprintable() or " " in token:
            raise ConfigError(
                "token", "must be the token `active-memory server token create` printed"
            )
        self._max_response = max_response_bytes
        self._max_request = max_request_bytes
        self._decoded = DecodedRows(capacity=2 * DEFAULT_LIMITS.max_live)
        context: ssl.SSLContext | None = None
        if ca_file is not None:
            try:
                context = ssl.create_default_context(cafile=os.fspath(ca_file))
            except (OSError, ssl.SSLError) as error:
                raise ConfigError(
                    "ca_file", f"{os.fspath(ca_file)!r} is not a PEM file ({error})"
                ) from None
        headers = {"authorization": f"Bearer {token}", "accept": "application/json"}
        self._exchange = open_exchange(
            self.url,
            API_PREFIX,
            headers,
            timeout_s=timeout_s,
            max_response_bytes=max_response_bytes,
            context=context,
            transport=transport,
        )

    def close(self) -> None:
        self._exchange.close()

    # -- transport -------------------------------------------------------------------------

    def _call(
        self,
        path: str,
        body: Model | None,
        answer: type[M],
        failure: type[StoreError],
        *,
        lesson_id: str | None = None,
        unknown_outcome: bool = False,
        new_route: bool = False,
    ) -> M:
        content = None if body is None else body.model_dump_json().encode("utf-8")
        if content is not None and len(content) > self._max_request:
            # Refused here: a service refusing it mid-upload may reset the connection first.
            raise PublicationError(
                f"the request is {len(content)} bytes; the memory service accepts at most "
                f"{self._max_request}; publish smaller batches"
            )
        try:
            status, raw = self._exchange.send("GET" if body is None else "POST", path, content)
        except AnswerTooLarge:
            raise failure(
                f"the memory service at {self.url!r} sent more than "
                f"{self._max_response} bytes; the answer was refused"
            ) from None
        except (Unreached, AnswerLost) as error:
            if unknown_outcome and isinstance(error, AnswerLost):
                raise StoreError(
                    f"the memory service at {self.url!r} did not answer the publication "
                    f"({error.kind}); its outcome is unknown: take a new snapshot "
                    "and publish again with the revisions it shows"
                ) from None
            raise failure(
                f"the memory service at {self.url!r} cannot be reached ({error}); nothing "
                "was read or written"
            ) from None
        if status == 200:
            try:
                return answer.parse_json(raw)
            except LessonValidationError as error:
                raise failure(
                    f"the memory service at {self.url!r} sent an invalid answer ({error}); "
                    "nothing was taken from it"
                ) from None
        if status == 404 and new_route:
            raise _RouteMissing(f"the memory service at {self.url!r} has no route {path!r}")
        raise self._error(status, raw, failure, lesson_id)

    def _error(
        self, status: int, raw: bytes, failure: type[StoreError], lesson_id: str | None
    ) -> StoreError:
        try:
            error = ErrorAnswer.parse_json(raw)
        except LessonValidationError:
            return failure(
                f"the memory service at {self.url!r} answered HTTP {status} without an "
                "explanation; nothing was taken from it"
            )
        return raised_for(error, self.url, failure, lesson_id)

    # -- the backend protocol --------------------------------------------------------------

    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        identity = request.identity
        body = SnapshotBody(
            run_id=identity.run_id,
            repository=identity.repository,
            graph_hash=identity.graph_hash,
            include_repository=request.repository,
            include_graph=request.graph,
        )
        answer = self._call("/snapshot", body, SnapshotAnswer, SnapshotError)
        rows = sorted(answer.rows, key=lambda row: row[0])
        verify_snapshot_rows(rows, source=f"the memory service at {self.url!r} sent lesson")
        return Snapshot(answer.generation, StoredLessons(rows, self._decoded))

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        deadline_s = None
        if control is not None:
            refusal = control.refusal()
            if refusal is not None:
                raise PublicationFenced(f"publication not started: {refusal}; nothing was written")
            if control.deadline is not None:
                deadline_s = max(0.0, control.deadline - time.monotonic())
        body = PublishBody(publication=publication, deadline_s=deadline_s)
        answer = self._call("/publish", body, ReceiptAnswer, StoreError, unknown_outcome=True)
        return PublicationReceipt(answer.generation, dict(answer.revisions), answer.retired)

    def generation(self) -> int:
        return self._call("/generation", None, GenerationAnswer, StoreError).generation

    # -- admin -----------------------------------------------------------------------------

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]:
        answer = self._call(
            "/history", HistoryBody(id=lesson_id), HistoryAnswer, StoreError, lesson_id=lesson_id
        )
        return tuple(entry.entry() for entry in answer.entries)

    def histories(self) -> Iterator[HistoryEntry]:
        """Every lesson's revisions the token reaches, ordered by id then revision, a page of
        lessons per request (each lesson whole: the ones :meth:`history` would not refuse).
        A service older than ``POST /v1/histories`` answers its first page 404: each lesson is
        then read on its own."""
        after: str | None = None
        while True:
            try:
                answer = self._call(
                    "/histories",
                    HistoriesBody(after=after),
                    HistoriesAnswer,
                    StoreError,
                    new_route=after is None,
                )
            except _RouteMissing:
                yield from self._histories_one_by_one()
                return
            for entry in answer.entries:
                yield entry.entry()
            if answer.next is None:
                return
            if after is not None and answer.next <= after:  # a page must move forward
                raise StoreError(
                    f"the memory service at {self.url!r} sent a history page that does not "
                    f"move past {after!r}; nothing more was read"
                )
            after = answer.next

    def _histories_one_by_one(self) -> Iterator[HistoryEntry]:
        """:meth:`histories` from a service without ``POST /v1/histories``: the live lessons
        and tombstones the token reaches, in id order, each through ``POST /v1/history``; one
        it refuses (a past revision outside the scope) or no longer has is left out."""
        live = {lesson.id for lesson in self.list_lessons()}
        for lesson_id in sorted(live | {tombstone.id for tombstone in self.list_retired()}):
            try:
                entries = self.history(lesson_id)
            except (ScopeRefused, LessonNotFound):
                continue
            yield from entries

    def list_lessons(
        self,
        repository: str | None = None,
        graph_hash: str | None = None,
        node_id: str | None = None,
    ) -> tuple[Lesson, ...]:
        """Every live lesson the token's scope reaches, sorted by id (validated on arrival);
        each filter given must match exactly, as on a store."""
        answer = self._call("/lessons", None, LessonsAnswer, StoreError)
        wanted = (("repository", repository), ("graph_hash", graph_hash), ("node_id", node_id))
        return tuple(
            lesson
            for lesson in sorted(answer.lessons, key=lambda lesson: lesson.id)
            if all(
                value is None or getattr(lesson.scope, field, None) == value
                for field, value in wanted
            )
        )

    def list_retired(self) -> tuple[Tombstone, ...]:
        """The tombstones the token's scope reaches, sorted by id."""
        return self._call("/retired", None, RetiredAnswer, StoreError).items()

    def lesson_page(
        self,
        *,
        repository: str | None = None,
        graph: str | None = None,
        query: str | None = None,
        page: int = 1,
        per_page: int = 50,
        sort: LessonSort = "oldest",
    ) -> LessonListing:
        """One page of the live lessons the token reaches, cut, searched and counted by the
        service in SQL (as ``EngineStore.lesson_page``); only the page's rows travel."""
        body = LessonPageBody(repository=repository, graph=graph, query=query,
                              page=max(page, 1), per_page=per_page, sort=sort)  # fmt: skip
        return self._call("/lessons/page", body, LessonPageAnswer, StoreError).listing()

    def retired_page(self, *, page: int = 1, per_page: int = 50) -> RetiredListing:
        """One page of the retired ids the token reaches, newest first, with their titles."""
        body = RetiredPageBody(page=max(page, 1), per_page=per_page)
        return self._call("/retired/page", body, RetiredPageAnswer, StoreError).listing()

    def get(self, lesson_id: str) -> Lesson:
        body = LessonIdBody(id=lesson_id)
        return self._call("/lesson", body, LessonAnswer, StoreError, lesson_id=lesson_id).lesson

    def export(self) -> Iterator[str]:
        """The export lines of every lesson and tombstone the token's scope reaches."""
        return iter(self._call("/export", None, ExportAnswer, StoreError).lines)

    def import_lines(
        self, lines: Iterable[str], *, replace: bool = False, run_id: str = "import"
    ) -> ImportReport:
        """Import an export through the service, all or nothing; every line is validated here
        first (LessonValidationError) and again by the service. Tombstone lines are refused
        through a token (ScopeRefused): import them with the database's own URL."""
        from active_memory.store.transfer import parse_lines  # the screens load on use

        kept = tuple(lines)
        parse_lines(kept)
        body = ImportBody(lines=kept, replace=replace, run_id=run_id)
        return self._call("/import", body, ImportReport, StoreError, unknown_outcome=True)

    # -- the quarantine's review -----------------------------------------------------------

    def held(self) -> tuple[QuarantineEntry, ...]:
        answer = self._call("/review", None, HeldAnswer, StoreError)
        return tuple(wire.entry() for wire in answer.entries)

    def held_entry(self, lesson_id: str) -> QuarantineEntry:
        body = LessonIdBody(id=lesson_id)
        return self._call("/review/show", body, HeldWire, StoreError, lesson_id=lesson_id).entry()

    def hold(self, entries: Sequence[QuarantineEntry]) -> None:
        if entries:
            body = HoldBody(entries=tuple(HeldWire.of(entry) for entry in entries))
            self._call("/review/hold", body, HeldCountAnswer, StoreError)

    def approve_held(self, lesson_id: str, *, run_id: str = REVIEW_RUN) -> PublicationReceipt:
        body = ApproveBody(id=lesson_id, run_id=run_id)
        answer = self._call(
            "/review/approve",
            body,
            ReceiptAnswer,
            StoreError,
            lesson_id=lesson_id,
            unknown_outcome=True,
        )
        return PublicationReceipt(answer.generation, dict(answer.revisions))

    def reject_held(self, lesson_id: str) -> bool:
        """Delete the held proposal; False: PostgreSQL keeps the dead row until VACUUM."""
        body = LessonIdBody(id=lesson_id)
        answer = self._call("/review/reject", body, RejectAnswer, StoreError, lesson_id=lesson_id)
        return answer.scrubbed

    def revert(
        self,
        lesson_id: str,
        to_revision: int,
        *,
        expected_revision: int | None = None,
        run_id: str = "remote-admin",
    ) -> PublicationReceipt:
        body = RevertBody(
            id=lesson_id,
            to_revision=to_revision,
            expected_revision=expected_revision,
            run_id=run_id,
        )
        answer = self._call(
            "/revert", body, ReceiptAnswer, StoreError, lesson_id=lesson_id, unknown_outcome=True
        )
        return PublicationReceipt(answer.generation, dict(answer.revisions))

    def purge(self, lesson_id: str, *, run_id: str = "remote-admin") -> PurgeReceipt:
        body = PurgeBody(id=lesson_id, run_id=run_id)
        receipt = self._call(
            "/purge", body, PurgeReceipt, StoreError, lesson_id=lesson_id, unknown_outcome=True
        )
        self._decoded.forget(lesson_id)  # the purged text does not stay in this client either
        return receipt
