"""The memory service's admin routes: what ``lessons show|list --retired|export|import|review``
and the browser's pages ask of a team store through the service (the wire format and the route
table are in ``store/admin_wire.py``).

Each route runs through the service's own request pipeline (credential first, bounded body,
errors as JSON; a write holds the tenant's writers' lock at most ``write_hold_s`` and stops
when its client goes, as a publication does) and confines its operation to the credential's
scope inside the store's transaction, as history, revert and purge do (``store/access.py``):
a token reads, exports, imports and reviews only lessons and proposals of its repository (and
the tenant's graph lessons it reaches). The browser's pages of lessons and of retired ids are
cut, searched and counted in SQL over those rows alone (``store/listing.py``). An import through
a token takes no tombstone lines: a tombstone carries no scope to check, so tombstones are
imported with the database's own URL.

The review: any token of the scope may hold proposals (a host does, after a postmortem), but the
service screens each held draft itself and keeps its own signals, never the client's
(``server/held_screen.py``); only a token created with ``--review`` approves or rejects one
(403 ``out_of_scope`` otherwise), so no token both holds a card and publishes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel
from starlette.requests import Request
from starlette.routing import Route

from active_memory.server.credentials import Credential
from active_memory.server.held_screen import screened_for_hold
from active_memory.server.refusals import refuse_without_review
from active_memory.store.admin_wire import (
    HISTORY_PAGE_BYTES,
    HISTORY_PAGE_LESSONS,
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
from active_memory.store.wire import API_PREFIX, ReceiptAnswer

if TYPE_CHECKING:
    from active_memory.server.app import MemoryService

__all__ = ["admin_routes"]


class _AdminRoutes:
    def __init__(self, service: MemoryService) -> None:
        self._service = service

    async def lesson(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, LessonIdBody)
        store = await self._service.store_of(who.tenant)
        lesson = await self._service.in_thread(lambda: store.get(body.id, within=who.scope))
        return LessonAnswer(lesson=lesson)

    async def histories(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, HistoriesBody)
        store = await self._service.store_of(who.tenant)
        entries, last = await self._service.in_thread(
            lambda: store.history_page(
                within=who.scope, after=body.after, lessons=HISTORY_PAGE_LESSONS
            )
        )
        return HistoriesAnswer.page(entries, last, budget=HISTORY_PAGE_BYTES)

    async def retired(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await self._service.store_of(who.tenant)
        tombstones = await self._service.in_thread(lambda: store.list_retired(within=who.scope))
        return RetiredAnswer.of(tombstones)

    async def lesson_page(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, LessonPageBody)
        store = await self._service.store_of(who.tenant)
        listing = await self._service.in_thread(
            lambda: store.lesson_page(
                repository=body.repository, graph=body.graph, query=body.query, page=body.page,
                per_page=body.per_page, sort=body.sort, within=who.scope,
            )
        )  # fmt: skip
        return LessonPageAnswer.of(listing)

    async def retired_page(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, RetiredPageBody)
        store = await self._service.store_of(who.tenant)
        listing = await self._service.in_thread(
            lambda: store.retired_page(page=body.page, per_page=body.per_page, within=who.scope)
        )
        return RetiredPageAnswer.of(listing)

    async def export(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await self._service.store_of(who.tenant)
        lines = await self._service.in_thread(lambda: tuple(store.export(within=who.scope)))
        return ExportAnswer(lines=lines)

    async def import_(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, ImportBody)
        store = await self._service.store_of(who.tenant)
        return await self._service.bounded_write(
            request,
            lambda control: store.import_lines(
                body.lines,
                replace=body.replace,
                run_id=body.run_id,
                within=who.scope,
                control=control,
            ),
        )

    async def review(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        store = await self._service.store_of(who.tenant)
        entries = await self._service.in_thread(lambda: store.held(within=who.scope))
        return HeldAnswer(entries=tuple(HeldWire.of(entry) for entry in entries))

    async def show(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, LessonIdBody)
        store = await self._service.store_of(who.tenant)
        entry = await self._service.in_thread(lambda: store.held_entry(body.id, within=who.scope))
        return HeldWire.of(entry)

    async def hold(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        body = await self._service.read_body(request, HoldBody)
        entries = await self._service.in_thread(
            lambda: screened_for_hold(wire.entry() for wire in body.entries)
        )
        store = await self._service.store_of(who.tenant)
        await self._service.bounded_write(
            request, lambda control: store.hold(entries, within=who.scope, control=control)
        )
        return HeldCountAnswer(held=len(entries))

    async def approve(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        refuse_without_review(who, "approving a quarantined proposal")
        body = await self._service.read_body(request, ApproveBody)
        store = await self._service.store_of(who.tenant)
        receipt = await self._service.bounded_write(
            request,
            lambda control: store.approve_held(
                body.id, run_id=body.run_id, within=who.scope, control=control
            ),
        )
        return ReceiptAnswer(generation=receipt.generation, revisions=receipt.revisions)

    async def reject(self, request: Request, who: Credential, arrived: float) -> BaseModel:
        refuse_without_review(who, "rejecting a quarantined proposal")
        body = await self._service.read_body(request, LessonIdBody)
        store = await self._service.store_of(who.tenant)
        scrubbed = await self._service.bounded_write(
            request,
            lambda control: store.reject_held(body.id, within=who.scope, control=control),
        )
        return RejectAnswer(id=body.id, scrubbed=scrubbed)


def admin_routes(service: MemoryService) -> list[Route]:
    """The admin routes of ``service``, each through its request pipeline."""
    admin = _AdminRoutes(service)
    reads = {"retired": admin.retired, "export": admin.export, "review": admin.review}
    calls = {
        "lesson": admin.lesson,
        "histories": admin.histories,
        "lessons/page": admin.lesson_page,
        "retired/page": admin.retired_page,
        "import": admin.import_,
        "review/show": admin.show,
        "review/hold": admin.hold,
        "review/approve": admin.approve,
        "review/reject": admin.reject,
    }
    routes = [
        Route(f"{API_PREFIX}/{name}", service.route(handler), methods=["GET"])
        for name, handler in reads.items()
    ]
    routes += [
        Route(f"{API_PREFIX}/{name}", service.route(handler), methods=["POST"])
        for name, handler in calls.items()
    ]
    return routes
