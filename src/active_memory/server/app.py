"""The memory service's ASGI application (Starlette): snapshot and publication for remote hosts,
and for a person's tools (``lessons stats``, the browser) the lessons in a credential's scope
(``GET /lessons``) and their history.

Every route but ``/healthz`` needs ``Authorization: Bearer <token>``. The credential is checked
first, before the body is read; the tenant and scope of the request are the credential's, and
the store confines the operation to them (``store/access.py``): nothing in the body can widen
them. Every draft of a publication passes the secret and injection screen before the write; a
flagged one refuses the batch (422 ``screened``, naming ids and codes, never the text). Bodies
are read up to ``max_request_bytes`` within ``request_timeout_s``; a larger body is read on and
dropped up to twice the limit, so a client still sending reads the 413 rather than a reset
connection, and a ``Content-Length`` over twice the limit is refused before reading.
Answers larger than ``max_response_bytes`` are refused rather than sent. A publication's
deadline (``deadline_s``) starts counting when the request arrives and is checked again once
the tenant's writer lock is held, immediately before the first write. Store calls run on
worker threads; the wire format is in ``store/wire.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from psycopg_pool import ConnectionPool
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from active_memory.errors import (
    ActiveMemoryError,
    LessonNotFound,
    LessonRetired,
    LessonValidationError,
    PublicationError,
    PublicationFenced,
    QuarantineNotFound,
    RevisionConflict,
    ScopeRefused,
    ScreenRefused,
)
from active_memory.models.base import Model
from active_memory.models.lessons import GraphScope
from active_memory.server.admin_routes import admin_routes
from active_memory.server.credentials import Credential, CredentialStore
from active_memory.store.admin_wire import HELD_SUBJECT
from active_memory.store.backend import PublicationControl, RunIdentity, SnapshotRequest
from active_memory.store.postgres import PostgresStore
from active_memory.store.results import DEFAULT_LIMITS, StoreLimits
from active_memory.store.wire import (
    API_PREFIX,
    ErrorAnswer,
    ErrorCode,
    GenerationAnswer,
    HistoryAnswer,
    HistoryBody,
    HistoryEntryWire,
    LessonsAnswer,
    MismatchWire,
    PublishBody,
    PurgeBody,
    ReceiptAnswer,
    RevertBody,
    ScreenedWire,
    SnapshotAnswer,
    SnapshotBody,
)

__all__ = ["DEFAULT_SERVICE_LIMITS", "MemoryService", "ServiceLimits"]

M = TypeVar("M", bound=Model)

_STATUS: dict[ErrorCode, int] = {
    "bad_request": 400,
    "unauthorized": 401,
    "out_of_scope": 403,
    "not_found": 404,
    "timeout": 408,
    "conflict": 409,
    "fenced": 412,
    "too_large": 413,
    "refused": 422,
    "screened": 422,
    "unavailable": 503,
}
_MISSING = (
    "this service needs a credential: send 'Authorization: Bearer <token>' "
    "(`active-memory server token create` issues one)"
)
_REFUSED = "the credential was refused (unknown, wrong, revoked or expired); ask for a new token"


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    max_request_bytes: int = 8 * 1024 * 1024
    max_response_bytes: int = 96 * 1024 * 1024
    request_timeout_s: float = 10.0


DEFAULT_SERVICE_LIMITS = ServiceLimits()
LEDGER_CHECK_S = 1.0


class _Refusal(Exception):
    def __init__(self, code: ErrorCode, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.answer = ErrorAnswer(error=code, message=message, **extra)


def _answer(model: BaseModel, status: int = 200, *, close: bool = False) -> Response:
    headers = {"connection": "close"} if close else {}
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="active-memory"'
    return Response(model.model_dump_json(), status, headers, media_type="application/json")


def _refusal_for(error: ActiveMemoryError) -> _Refusal:
    message = str(error)
    if isinstance(error, ScopeRefused):
        return _Refusal("out_of_scope", message, subject=error.what, scope=error.scope)
    if isinstance(error, RevisionConflict):
        mismatches = tuple(
            MismatchWire(id=m.id, expected=m.expected, found=m.found, tombstoned=m.tombstoned)
            for m in error.mismatches
        )
        return _Refusal("conflict", message, mismatches=mismatches)
    if isinstance(error, LessonRetired):
        return _Refusal("not_found", message, retired_at=error.revision)
    if isinstance(error, LessonNotFound):
        return _Refusal("not_found", message)
    if isinstance(error, QuarantineNotFound):
        return _Refusal("not_found", message, subject=HELD_SUBJECT)
    if isinstance(error, PublicationFenced):
        return _Refusal("fenced", message)
    if isinstance(error, LessonValidationError):
        return _Refusal("bad_request", message)
    if isinstance(error, ScreenRefused):
        screened = tuple(ScreenedWire(id=i, codes=codes) for i, codes in error.drafts)
        return _Refusal("screened", message, screened=screened)
    if isinstance(error, PublicationError):
        return _Refusal("refused", message)
    return _Refusal("unavailable", message)


class MemoryService:
    """The service over one database: its credentials and, per tenant, a store on one pool."""

    def __init__(
        self,
        url: str,
        pool: ConnectionPool,
        *,
        limits: ServiceLimits = DEFAULT_SERVICE_LIMITS,
        store_limits: StoreLimits = DEFAULT_LIMITS,
    ) -> None:
        self._url = url
        self._pool = pool
        self.limits = limits
        self._store_limits = store_limits
        self.credentials = CredentialStore(pool)
        self._stores: dict[str, PostgresStore] = {}
        self._checked: dict[str, float] = {}
        self._stores_lock = threading.Lock()

    def close(self) -> None:
        """Close the shared pool (and so every tenant's store on it)."""
        with self._stores_lock:
            self._stores.clear()
        self._pool.close()

    def store(self, tenant: str) -> PostgresStore:
        """The tenant's store, opened (and migrated) once. Its migration ledger is read again
        at most every ``LEDGER_CHECK_S`` seconds: once another process has edited, rolled back
        or advanced it, StoreUnavailable (503) until it matches again."""
        now = time.monotonic()
        with self._stores_lock:
            store = self._stores.get(tenant)
            if store is None:
                store = PostgresStore(
                    self._url, tenant=tenant, pool=self._pool, limits=self._store_limits
                )
                self._stores[tenant] = store
                self._checked[tenant] = now
                return store
            due = now - self._checked.get(tenant, 0.0) >= LEDGER_CHECK_S
        if due:
            store.check_migrations()
            with self._stores_lock:
                self._checked[tenant] = now
        return store

    # -- the request pipeline --------------------------------------------------------------

    async def _credential(self, request: Request) -> Credential:
        header = request.headers.get("authorization")
        if header is None:
            raise _Refusal("unauthorized", _MISSING)
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token or len(token) > 200:
            raise _Refusal("unauthorized", _REFUSED)
        credential = await run_in_threadpool(self.credentials.authenticate, token.strip())
        if credential is None:
            raise _Refusal("unauthorized", _REFUSED)
        return credential

    async def _body(self, request: Request, model: type[M]) -> M:
        limit = self.limits.max_request_bytes
        too_large = _Refusal("too_large", f"the request body exceeds {limit} bytes; send less")
        declared = request.headers.get("content-length")
        if declared is not None and not (declared.isascii() and declared.isdigit()):
            raise _Refusal("bad_request", f"Content-Length {declared!r} is not a byte count")
        if declared is not None and int(declared) > 2 * limit:
            raise too_large  # not worth reading: answered at once, the upload cut short
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.limits.request_timeout_s):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > 2 * limit:
                        break
                    if size <= limit:
                        chunks.append(chunk)
        except TimeoutError:
            raise _Refusal("timeout", "the request body did not arrive in time") from None
        except ClientDisconnect:
            raise _Refusal("bad_request", "the client went away before the body arrived") from None
        if size > limit:
            # A body up to twice the limit is read (and dropped) before the refusal, so the
            # client, still sending, reads the 413 instead of a reset connection.
            raise too_large
        try:
            return model.parse_json(b"".join(chunks), where="body")
        except LessonValidationError as error:
            raise _Refusal("bad_request", f"the request is not valid ({error})") from None

    def _route(
        self, handler: Callable[[Request, Credential, float], Awaitable[BaseModel]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            arrived = time.monotonic()
            try:
                credential = await self._credential(request)
                answer = await handler(request, credential, arrived)
            except _Refusal as refusal:
                close = refusal.answer.error in ("unauthorized", "too_large", "timeout")
                return _answer(refusal.answer, _STATUS[refusal.answer.error], close=close)
            except ActiveMemoryError as error:
                failed = _refusal_for(error).answer
                return _answer(failed, _STATUS[failed.error])
            response = _answer(answer)
            if len(response.body) > self.limits.max_response_bytes:
                refused = ErrorAnswer(
                    error="unavailable",
                    message=f"the answer would exceed {self.limits.max_response_bytes} bytes; "
                    "the service refuses to send it (raise --max-response-bytes)",
                )
                return _answer(refused, 503)
            return response

        return endpoint

    # The admin routes (server/admin_routes.py) run through the same pipeline.
    route = _route
    read_body = _body

    # -- the operations --------------------------------------------------------------------

    async def _snapshot(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, SnapshotBody)
        wanted = SnapshotRequest(
            RunIdentity(body.run_id, body.repository, body.graph_hash),
            repository=body.include_repository,
            graph=body.include_graph,
        )
        store = await run_in_threadpool(self.store, who.tenant)
        generation, rows = await run_in_threadpool(
            lambda: store.snapshot_rows(wanted, within=who.scope)
        )
        return SnapshotAnswer.model_construct(generation=generation, rows=tuple(rows))

    async def _publish(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, PublishBody)
        deadline = None if body.deadline_s is None else arrived + body.deadline_s
        # No screened_by: whatever a client screened, the service screens every draft itself
        # (a leaked token must not plant a card for every agent of its repository).
        control = PublicationControl(deadline=deadline)
        store = await run_in_threadpool(self.store, who.tenant)
        receipt = await run_in_threadpool(
            lambda: store.publish(body.publication, control, within=who.scope)
        )
        return ReceiptAnswer(
            generation=receipt.generation, revisions=receipt.revisions, retired=receipt.retired
        )

    async def _generation(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await run_in_threadpool(self.store, who.tenant)
        return GenerationAnswer(generation=await run_in_threadpool(store.generation))

    async def _history(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, HistoryBody)
        store = await run_in_threadpool(self.store, who.tenant)
        entries = await run_in_threadpool(lambda: store.history(body.id, within=who.scope))
        return HistoryAnswer(entries=tuple(HistoryEntryWire.of(entry) for entry in entries))

    async def _lessons(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await run_in_threadpool(self.store, who.tenant)
        live = await run_in_threadpool(store.list_lessons)
        scope = who.scope
        within = tuple(
            lesson
            for lesson in live
            if scope.allows(
                lesson.scope.kind,
                lesson.scope.repository,
                lesson.scope.graph_hash if isinstance(lesson.scope, GraphScope) else None,
            )
        )
        return LessonsAnswer(lessons=within)

    async def _revert(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, RevertBody)
        store = await run_in_threadpool(self.store, who.tenant)
        receipt = await run_in_threadpool(
            lambda: store.revert(
                body.id,
                body.to_revision,
                expected_revision=body.expected_revision,
                run_id=body.run_id,
                within=who.scope,
            )
        )
        return ReceiptAnswer(generation=receipt.generation, revisions=receipt.revisions)

    async def _purge(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, PurgeBody)
        store = await run_in_threadpool(self.store, who.tenant)
        return await run_in_threadpool(
            lambda: store.purge(body.id, run_id=body.run_id, within=who.scope)
        )

    def app(self) -> Starlette:
        async def healthz(request: Request) -> Response:
            return Response(b'{"ok":true}', media_type="application/json")

        routes = [
            Route("/healthz", healthz, methods=["GET"]),
            Route(f"{API_PREFIX}/generation", self._route(self._generation), methods=["GET"]),
            Route(f"{API_PREFIX}/lessons", self._route(self._lessons), methods=["GET"]),
        ]
        for name, handler in (
            ("snapshot", self._snapshot),
            ("publish", self._publish),
            ("history", self._history),
            ("revert", self._revert),
            ("purge", self._purge),
        ):
            routes.append(Route(f"{API_PREFIX}/{name}", self._route(handler), methods=["POST"]))
        routes += admin_routes(self)
        return Starlette(routes=routes)
