"""The memory service's ASGI application (Starlette; ``dispatch.py`` finds its routes): snapshot
and publication for remote hosts, and for a person's tools (``lessons stats``, the browser) the
lessons in a credential's scope (``GET /lessons``) and their history.

Every route but ``/healthz`` needs ``Authorization: Bearer <token>``. The credential is checked
first, before the body is read (a publication or a snapshot that has already arrived whole, its
body in the protocol's buffer, is taken from it at once and checked in the same order on the
worker thread that then answers it: each hop between the loop and a thread costs both); the
tenant and scope of the request are the credential's, and the store confines the operation to
them (``store/access.py``): nothing in the body can widen them. Every draft of a publication
passes the secret and injection screen before the write; a flagged one refuses the batch (422
``screened``, naming ids and codes, never the text). Bodies are read within the limits as
``bodies.py`` says. Answers larger than ``max_response_bytes`` are refused rather than sent.
A publication's deadline (``deadline_s``) starts counting when the request arrives and is
checked again once the tenant's writer lock is held, immediately before the first write. Store
calls run on worker threads (``workers.py``); the wire format is in ``store/wire.py``.

Fairness between the tokens of a tenant (``fairness.py``): each token's requests and bytes are
rate-limited (``429`` with ``Retry-After``, before the body is read); a publication naming more
than ``max_publication_mutations`` mutations (``413``) or one that would grow the store past its
capacity (``422``) is refused before it waits for the tenant's writers' lock; a write holds that
lock at most ``write_hold_s`` seconds, and stops when its client goes away (``503`` with
``Retry-After``; rolled back either way). A token bound to a run (``server token create
--run``) writes only under that run id (``403``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from psycopg_pool import ConnectionPool
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from active_memory.errors import (
    ActiveMemoryError,
    LessonValidationError,
)
from active_memory.models.base import Model
from active_memory.server.admin_routes import admin_routes
from active_memory.server.bodies import PARSE_IN_LOOP_BYTES, Bodies
from active_memory.server.credentials import Credential, CredentialStore
from active_memory.server.dispatch import DirectRoutes
from active_memory.server.fairness import (
    BatchCounts,
    TokenRates,
    capacity_refusal,
    raw_counts,
)
from active_memory.server.limits import DEFAULT_SERVICE_LIMITS, ServiceLimits
from active_memory.server.refusals import (
    MISSING_CREDENTIAL as _MISSING,
    REFUSED_CREDENTIAL as _REFUSED,
    STATUS as _STATUS,
    Refusal as _Refusal,
    answer as _answer,
    refusal_for as _refusal_for,
    refuse_other_run as _refuse_other_run,
)
from active_memory.server.workers import WorkerThreads
from active_memory.store.backend import (
    PublicationControl,
    PublicationReceipt,
    RunIdentity,
    SnapshotRequest,
)
from active_memory.store.postgres import PostgresStore
from active_memory.store.postgres.schema import tenant_schema
from active_memory.store.postgres.session import reading
from active_memory.store.results import DEFAULT_LIMITS, StoreLimits
from active_memory.store.wire import (
    API_PREFIX,
    ErrorAnswer,
    GenerationAnswer,
    HistoryAnswer,
    HistoryBody,
    HistoryEntryWire,
    LessonsAnswer,
    PublishBody,
    PurgeBody,
    ReceiptAnswer,
    RevertBody,
    SnapshotAnswer,
    SnapshotBody,
)
from active_memory.store.writes import Capacity, read_capacity

__all__ = ["DEFAULT_SERVICE_LIMITS", "MemoryService", "ServiceLimits"]

M = TypeVar("M", bound=Model)
R = TypeVar("R")
LEDGER_CHECK_S = 1.0


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
        self.rates = TokenRates(limits.rates)
        self.bodies = Bodies(limits, self.rates)
        self._stores: dict[str, PostgresStore] = {}
        self._checked: dict[str, float] = {}
        self._stores_lock = threading.Lock()
        self._workers = WorkerThreads()

    def close(self) -> None:
        """Close the shared pool (and so every tenant's store on it)."""
        with self._stores_lock:
            self._stores.clear()
        self._workers.stop()
        self._pool.close()

    async def in_thread(self, call: Callable[..., R], *args: object) -> R:
        """``call(*args)`` on one of the service's worker threads (``workers.py``)."""
        return await self._workers.run(call, *args)

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
            due = self._ledger_due(tenant, now)
        if due:
            store.check_migrations()
            with self._stores_lock:
                self._checked[tenant] = now
        return store

    async def store_of(self, tenant: str) -> PostgresStore:
        """:meth:`store`, answered on the event loop when the tenant's store is open and its
        ledger was read within ``LEDGER_CHECK_S`` (two dict reads, atomic under the GIL, so
        without the lock that an opening store holds), else on a worker thread: a hop to a
        thread and back costs two context switches, on every request."""
        store = self._stores.get(tenant)
        if store is not None and not self._ledger_due(tenant, time.monotonic()):
            return store
        return await self._workers.run(self.store, tenant)

    def _ledger_due(self, tenant: str, now: float) -> bool:
        """Whether the tenant's migration ledger was last read ``LEDGER_CHECK_S`` or more ago."""
        return now - self._checked.get(tenant, 0.0) >= LEDGER_CHECK_S

    # -- the request pipeline --------------------------------------------------------------

    def _token(self, request: Request) -> str:
        header = request.headers.get("authorization")
        if header is None:
            raise _Refusal("unauthorized", _MISSING)
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token or len(token) > 200:
            raise _Refusal("unauthorized", _REFUSED)
        return token.strip()

    def _authenticated(self, token: str) -> Credential:
        """The token's credential (blocking: a worker thread's call); 401 when it has none."""
        credential = self.credentials.authenticate(token)
        if credential is None:
            raise _Refusal("unauthorized", _REFUSED)
        return credential

    async def _credential(self, request: Request) -> Credential:
        return await self._workers.run(self._authenticated, self._token(request))

    async def _body(self, request: Request, model: type[M]) -> M:
        raw = await self.bodies.raw(request)
        # A large body is parsed on a worker thread: validating it must not stall the loop.
        if len(raw) < PARSE_IN_LOOP_BYTES:
            return _parsed(raw, model)
        return await self._workers.run(_parsed, raw, model)

    def _checked_whole(self, request: Request, token: str, raw: bytes) -> Credential:
        """The checks of a request that arrived whole (blocking: a worker thread's call), in
        the order the pipeline makes them: the token, its rates, the body's size."""
        who = self._authenticated(token)
        self.bodies.admit(request, who)
        if len(raw) > self.limits.max_request_bytes:
            raise self.bodies.too_large()
        return who

    def _refuse_batch(self, counts: BatchCounts, tenant: str) -> None:
        """413 over the mutation cap; 422 when the batch cannot fit the store (read without the
        lock: only a batch that creates can grow the counts)."""
        most = self.limits.max_publication_mutations
        if counts.mutations > most:
            raise _Refusal(
                "too_large",
                f"the publication names {counts.mutations} mutations; the service takes at "
                f"most {most} per request; publish them in smaller batches",
            )
        if counts.creations > counts.retirements:
            refusal = capacity_refusal(counts, self._capacity(tenant), self._store_limits)
            if refusal is not None:
                raise _Refusal("refused", refusal)

    def _publication_of(self, raw: bytes, who: Credential) -> PublishBody:
        """The publication, refused before it is parsed when its raw counts already say so,
        and again on its validated counts; either way before the writers' lock."""
        scanned = raw_counts(raw)
        self._refuse_batch(scanned, who.tenant)
        try:
            body = PublishBody.parse_json(raw, where="body")
        except LessonValidationError as error:
            raise _Refusal("bad_request", f"the request is not valid ({error})") from None
        counted = BatchCounts.of(body.publication)
        if counted != scanned:  # keys spelt with escapes: the scan missed them
            self._refuse_batch(counted, who.tenant)
        return body

    def _capacity(self, tenant: str) -> Capacity:
        with reading(self._pool, tenant_schema(tenant), f"reading tenant {tenant!r}") as session:
            return read_capacity(session)

    async def _bounded_write(self, request: Request, write: Callable[[PublicationControl], R]) -> R:
        """Run ``write`` with the bound every write through the service gets (it holds the
        tenant's writers' lock at most ``write_hold_s``: the request is answered 503 past it),
        aborted if the client goes away (:meth:`_while_connected`)."""
        control = PublicationControl(hold_s=self.limits.write_hold_s)
        return await self._while_connected(request, control, lambda: write(control))

    async def _while_connected(
        self, request: Request, control: PublicationControl, write: Callable[[], R]
    ) -> R:
        """Run ``write`` on a worker thread; if the client goes away meanwhile, abort it (its
        transaction rolls back and the writers' lock is released at once)."""

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                continue
            await self._workers.run(control.abort, "the client went away")

        watcher = asyncio.create_task(watch())
        try:
            return await self._workers.run(write)
        finally:
            watcher.cancel()

    def _route(
        self,
        handler: Callable[[Request, Credential, float], Awaitable[BaseModel]],
        whole: Callable[[Request, bytes, float], Awaitable[BaseModel]] | None = None,
    ) -> Callable[[Request], Awaitable[Response]]:
        """The endpoint of ``handler``; with ``whole``, a request that arrived whole is answered
        by ``whole`` instead, given its body (it checks the token first, on a worker thread)."""

        async def endpoint(request: Request) -> Response:
            arrived = time.monotonic()
            try:
                if whole is not None and self.bodies.arrived_whole(request):
                    answer = await whole(request, await self.bodies.taken(request), arrived)
                else:
                    credential = await self._credential(request)
                    request.state.credential = credential  # whose bytes a streamed body charges
                    self.bodies.admit(request, credential)
                    answer = await handler(request, credential, arrived)
            except _Refusal as refusal:
                # A refused body may still be arriving: closing spares reading it to the end.
                close = refusal.answer.error in (
                    "unauthorized",
                    "too_large",
                    "timeout",
                    "rate_limited",
                )
                status = _STATUS[refusal.answer.error]
                return _answer(refusal.answer, status, close=close, wait_s=refusal.wait_s)
            except ActiveMemoryError as error:
                failed = _refusal_for(error)
                status = _STATUS[failed.answer.error]
                return _answer(failed.answer, status, wait_s=failed.wait_s)
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
    bounded_write = _bounded_write

    # -- the operations --------------------------------------------------------------------

    async def _snapshot(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, SnapshotBody)
        store = await self.store_of(who.tenant)
        generation, rows = await self._workers.run(_snapshot_rows, store, body, who)
        return SnapshotAnswer.model_construct(generation=generation, rows=tuple(rows))

    async def _snapshot_whole(self, request: Request, raw: bytes, arrived: float) -> BaseModel:
        """A snapshot that arrived whole: from its token to its rows on one worker thread (each
        hop between the loop and a thread costs both about 50 us of CPU)."""
        token = self._token(request)

        def snapshot() -> tuple[int, list[tuple[object, ...]]]:
            who = self._checked_whole(request, token, raw)
            return _snapshot_rows(self.store(who.tenant), _parsed(raw, SnapshotBody), who)

        generation, rows = await self._workers.run(snapshot)
        return SnapshotAnswer.model_construct(generation=generation, rows=tuple(rows))

    async def _publish(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await self.store_of(who.tenant)
        raw = await self.bodies.raw(request)
        receipt = await self._bounded_write(
            request, lambda control: self._publication(store, raw, who, arrived, control)
        )
        return _receipt_answer(receipt)

    async def _publish_whole(self, request: Request, raw: bytes, arrived: float) -> BaseModel:
        """A publication that arrived whole: from its token to its receipt on one worker thread
        (each hop between the loop and a thread costs both about 50 us of CPU), with the checks
        in the order the pipeline makes them: the token, its rates, the body's size."""
        token = self._token(request)
        control = PublicationControl(hold_s=self.limits.write_hold_s)

        def publish() -> PublicationReceipt:  # run as itself: the one hop to a worker thread
            who = self._checked_whole(request, token, raw)
            return self._publication(self.store(who.tenant), raw, who, arrived, control)

        return _receipt_answer(await self._while_connected(request, control, publish))

    def _publication(
        self,
        store: PostgresStore,
        raw: bytes,
        who: Credential,
        arrived: float,
        control: PublicationControl,
    ) -> PublicationReceipt:
        """The publication of ``raw`` (blocking: one worker thread from the raw body to the
        receipt). No screened_by: whatever a client screened, the service screens every draft
        itself (a leaked token must not plant a card for every agent of its repository)."""
        body = self._publication_of(raw, who)
        publication = body.publication
        _refuse_other_run(who, publication.run_id)
        if body.deadline_s is not None:
            control.deadline = arrived + body.deadline_s
        return store.publish(publication, control, within=who.scope)

    async def _generation(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await self.store_of(who.tenant)
        return GenerationAnswer(generation=await self._workers.run(store.generation))

    async def _history(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, HistoryBody)
        store = await self.store_of(who.tenant)
        entries = await self._workers.run(lambda: store.history(body.id, within=who.scope))
        return HistoryAnswer(entries=tuple(HistoryEntryWire.of(entry) for entry in entries))

    async def _lessons(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await self.store_of(who.tenant)
        within = await self._workers.run(lambda: store.list_lessons(within=who.scope))
        return LessonsAnswer(lessons=within)

    async def _revert(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, RevertBody)
        _refuse_other_run(who, body.run_id)
        store = await self.store_of(who.tenant)
        receipt = await self._bounded_write(
            request,
            lambda control: store.revert(
                body.id,
                body.to_revision,
                expected_revision=body.expected_revision,
                run_id=body.run_id,
                within=who.scope,
                control=control,
            ),
        )
        return ReceiptAnswer(generation=receipt.generation, revisions=receipt.revisions)

    async def _purge(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._body(request, PurgeBody)
        _refuse_other_run(who, body.run_id)
        store = await self.store_of(who.tenant)
        return await self._bounded_write(
            request,
            lambda control: store.purge(
                body.id, run_id=body.run_id, within=who.scope, control=control
            ),
        )

    def app(self) -> DirectRoutes:
        async def healthz(request: Request) -> Response:
            return Response(b'{"ok":true}', media_type="application/json")

        routes = [
            Route("/healthz", healthz, methods=["GET"]),
            Route(f"{API_PREFIX}/generation", self._route(self._generation), methods=["GET"]),
            Route(f"{API_PREFIX}/lessons", self._route(self._lessons), methods=["GET"]),
        ]
        for name, handler in (
            ("history", self._history),
            ("revert", self._revert),
            ("purge", self._purge),
        ):
            routes.append(Route(f"{API_PREFIX}/{name}", self._route(handler), methods=["POST"]))
        for name, handler, whole in (
            ("snapshot", self._snapshot, self._snapshot_whole),
            ("publish", self._publish, self._publish_whole),
        ):
            endpoint = self._route(handler, whole=whole)
            routes.append(Route(f"{API_PREFIX}/{name}", endpoint, methods=["POST"]))
        routes += admin_routes(self)
        return DirectRoutes(routes)


def _receipt_answer(receipt: PublicationReceipt) -> ReceiptAnswer:
    return ReceiptAnswer(
        generation=receipt.generation, revisions=receipt.revisions, retired=receipt.retired
    )


def _parsed(raw: bytes, model: type[M]) -> M:
    try:
        return model.parse_json(raw, where="body")
    except LessonValidationError as error:
        raise _Refusal("bad_request", f"the request is not valid ({error})") from None


def _snapshot_rows(
    store: PostgresStore, body: SnapshotBody, who: Credential
) -> tuple[int, list[tuple[object, ...]]]:
    """The rows of the snapshot ``body`` asks for, within the credential's scope (blocking)."""
    wanted = SnapshotRequest(
        RunIdentity(body.run_id, body.repository, body.graph_hash),
        repository=body.include_repository,
        graph=body.include_graph,
    )
    return store.snapshot_rows(wanted, within=who.scope)
