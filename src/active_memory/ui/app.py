"""The browser's ASGI application: server-rendered pages, nothing to build, nothing fetched.

Templates are Jinja2 with autoescaping on for every page, so each title, recommendation, scope
entry, reference, run id and error message is text, never markup: lesson content is untrusted.
Every answer carries a strict Content-Security-Policy (no script at all, styles only from this
server's own stylesheet) and refuses framing; see :mod:`active_memory.ui.security` for the
token, cookie, CSRF and Host checks.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from active_memory.errors import (
    ActiveMemoryError,
    LessonNotFound,
    LessonValidationError,
    PublicationError,
    QuarantineNotFound,
    RevisionConflict,
)
from active_memory.models.ids import validate_lesson_id
from active_memory.store.listing import LessonSort
from active_memory.store.search_text import query_problem
from active_memory.ui.chart import rejection_chart
from active_memory.ui.impact_view import impact_chart, repository_rows
from active_memory.ui.security import SESSION_COOKIE, Sessions
from active_memory.ui.views import (
    LESSONS_PER_PAGE,
    SORT_LABELS,
    UiData,
    card_text,
    draft_lines,
    scope_label,
)

__all__ = ["CSP", "UiApp"]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",  # no-referrer would make a POST's Origin "null"
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
}
_MAX_FORM_BYTES = 16 * 1024
_QUERY_CHARS = 200


def _date(time_ms: int | None) -> str:
    if time_ms is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time_ms / 1000))


def _page_number(given: str | None) -> int:
    """A page number from the URL; anything that is not a small positive number is page 1."""
    if given is None or not given.isdigit() or len(given) > 6:
        return 1
    return max(int(given), 1)


def _notice(request: Request) -> str | None:
    """The sentence after an approve or reject, built from a checked id and number only: the
    page never echoes free text from its URL."""
    params = request.query_params
    try:
        if "approved" in params:
            lesson_id = validate_lesson_id("approved", params["approved"])
            revision = int(params.get("revision", ""))
            return f"approved {lesson_id}: live at revision {revision}"
        if "rejected" in params:
            lesson_id = validate_lesson_id("rejected", params["rejected"])
            return f"rejected {lesson_id}: its content was erased"
    except (LessonValidationError, ValueError):
        return None
    return None


class UiApp:
    """The pages over ``data``, for the one session ``sessions`` opens; ``origin`` is
    ``http://host:port`` as the browser sees it (Host and Origin must match it)."""

    def __init__(self, data: UiData, sessions: Sessions, origin: str) -> None:
        self.data = data
        self.sessions = sessions
        self.origin = origin
        self.host = origin.split("://", 1)[1]
        self.env = Environment(
            loader=PackageLoader("active_memory.ui", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals.update(date=_date, scope_label=scope_label)
        self.css = resources.files("active_memory.ui").joinpath("static/ui.css").read_bytes()

    # -- plumbing --------------------------------------------------------------------------

    def _page(self, name: str, status: int = 200, **context: Any) -> Response:
        html = self.env.get_template(name).render(**context)
        return HTMLResponse(html, status, headers=_HEADERS)

    def _refuse(self, status: int, message: str) -> Response:
        return self._page("error.html", status, message=message, csrf=None)

    def _guard(
        self,
        handler: Callable[[Request, str], Awaitable[Response]],
        *,
        post: bool = False,
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if request.headers.get("host") != self.host:
                return self._refuse(403, "this page answers only at its own loopback address")
            csrf = self.sessions.csrf_for(request.cookies.get(SESSION_COOKIE))
            if csrf is None:
                return self._refuse(
                    403,
                    "no session: open the URL `active-memory ui` printed (its token works once)",
                )
            if post:
                origin = request.headers.get("origin")
                if origin is not None and origin != self.origin:
                    return self._refuse(403, "the form came from another site")
                form = await self._form(request)
                if form is None:
                    return self._refuse(413, "the form is too large")
                if not Sessions.csrf_matches(csrf, form.get("csrf")):
                    return self._refuse(403, "the form's CSRF token is missing or wrong; reload")
            # The refusals below say what kind of thing was wrong, never the text that was
            # sent: an error page echoes nothing from the request.
            try:
                return await handler(request, csrf)
            except LessonNotFound:
                return self._refuse(404, "no lesson with that id in this store")
            except QuarantineNotFound:
                return self._refuse(404, "no quarantined proposal with that id")
            except LessonValidationError:
                return self._refuse(400, "that is not a lesson id (lesson- and 26 ULID characters)")
            except ActiveMemoryError as error:
                return self._refuse(409 if isinstance(error, PublicationError) else 500, str(error))

        return endpoint

    @staticmethod
    async def _form(request: Request) -> dict[str, str] | None:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > _MAX_FORM_BYTES:
                return None
        try:
            fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8)
        except ValueError:  # more fields than any of these forms has
            return None
        return {key: values[0] for key, values in fields.items()}

    # -- pages -----------------------------------------------------------------------------

    async def _login(self, request: Request) -> Response:
        if request.headers.get("host") != self.host:
            return self._refuse(403, "this page answers only at its own loopback address")
        opened = self.sessions.redeem(request.query_params.get("token", ""))
        if opened is None:
            return self._refuse(
                403, "this link's token is wrong or already used; run `active-memory ui` again"
            )
        session, _ = opened
        response = RedirectResponse("/", 303, headers=_HEADERS)
        response.set_cookie(
            SESSION_COOKIE, session, httponly=True, samesite="strict", path="/", secure=False
        )
        return response

    async def _index(self, request: Request, csrf: str) -> Response:
        params = request.query_params
        repository = params.get("repository") or None
        graph = params.get("graph") or None
        query = (params.get("q") or "")[:_QUERY_CHARS] or None
        # A query the CLI refuses (no word, too many) is refused here too, in the page.
        problem = query_problem(query) if query else None
        searched = None if problem else query
        page = _page_number(params.get("page"))
        # An order the menu does not offer is the default, as a bad page number is page 1.
        sort: LessonSort = next((key for key in SORT_LABELS if key == params.get("sort")), "oldest")
        listing, repositories, graphs = await run_in_threadpool(
            lambda: self.data.lessons(
                repository=repository, graph=graph, query=searched, page=page, sort=sort
            )
        )
        held = await run_in_threadpool(self.data.quarantine)
        chosen = sort if sort != "oldest" else None
        kept = {"repository": repository, "graph": graph, "q": query, "sort": chosen}
        filters = {key: value for key, value in kept.items() if value}
        return self._page(
            "index.html",
            400 if problem else 200,
            rows=listing.rows,
            listing=listing,
            filters=filters,
            repositories=sorted(repositories.items()),
            graphs=sorted(graphs.items()),
            repository=repository,
            graph=graph,
            query=query,
            searched=searched,
            problem=problem,
            sort=sort,
            sorts=SORT_LABELS,
            held=len(held),
            csrf=csrf,
        )

    async def _retired(self, request: Request, csrf: str) -> Response:
        page = _page_number(request.query_params.get("page"))
        listing = await run_in_threadpool(lambda: self.data.retired(page))
        offset = (listing.page - 1) * LESSONS_PER_PAGE
        return self._page("retired.html", listing=listing, offset=offset, csrf=csrf)

    async def _lesson(self, request: Request, csrf: str) -> Response:
        lesson_id = validate_lesson_id("id", request.path_params["lesson_id"])
        live, diffs, ledger = await run_in_threadpool(lambda: self.data.lesson(lesson_id))
        impact = await run_in_threadpool(lambda: self.data.lesson_impact(lesson_id))
        return self._page(
            "lesson.html",
            impact=impact,
            impact_chart=impact_chart(impact) if impact is not None else None,
            lesson_id=lesson_id,
            live=live,
            card=card_text(live) if live is not None else None,
            diffs=list(reversed(diffs)),
            ledger=ledger,
            csrf=csrf,
        )

    async def _quarantine(self, request: Request, csrf: str) -> Response:
        entries = await run_in_threadpool(self.data.quarantine)
        return self._page(
            "quarantine.html",
            entries=entries,
            available=self.data.has_quarantine,
            service=self.data.service_url,
            notice=_notice(request),
            lines=draft_lines,
            csrf=csrf,
        )

    async def _already_decided(self, lesson_id: str) -> Response:
        """The answer to a second approve or reject of one proposal (two tabs, a double click,
        the CLI at the same time): what became of it, and that nothing happened twice."""
        live = await run_in_threadpool(lambda: self.data.live_revision(lesson_id))
        if live is not None:
            message = (
                f"{lesson_id} was already approved: it is live at revision {live}. "
                "Nothing was published twice."
            )
        else:
            message = (
                f"{lesson_id} is no longer in the quarantine: it was already rejected. "
                "Nothing was changed."
            )
        return self._refuse(409, message)

    async def _approve(self, request: Request, csrf: str) -> Response:
        lesson_id = validate_lesson_id("id", request.path_params["lesson_id"])
        try:
            receipt = await run_in_threadpool(lambda: self.data.approve(lesson_id))
        except (QuarantineNotFound, RevisionConflict):
            return await self._already_decided(lesson_id)
        revision = receipt.revisions[lesson_id]
        return RedirectResponse(
            f"/quarantine?approved={lesson_id}&revision={revision}", 303, headers=_HEADERS
        )

    async def _reject(self, request: Request, csrf: str) -> Response:
        lesson_id = validate_lesson_id("id", request.path_params["lesson_id"])
        try:
            await run_in_threadpool(lambda: self.data.reject(lesson_id))
        except QuarantineNotFound:
            return await self._already_decided(lesson_id)
        return RedirectResponse(f"/quarantine?rejected={lesson_id}", 303, headers=_HEADERS)

    async def _runs(self, request: Request, csrf: str) -> Response:
        rows, rejections, sources = await run_in_threadpool(self.data.runs_view)
        return self._page(
            "runs.html",
            rows=rows,
            chart=rejection_chart(rejections),
            skipped=sources.skipped,
            csrf=csrf,
        )

    async def _impact(self, request: Request, csrf: str) -> Response:
        report = await run_in_threadpool(self.data.impact)
        return self._page("impact.html", report=report, rows=repository_rows(report), csrf=csrf)

    async def _learn(self, request: Request, csrf: str) -> Response:
        sessions = await run_in_threadpool(self.data.learn_view)
        return self._page("learn.html", sessions=sessions, csrf=csrf)

    async def _css(self, request: Request, csrf: str) -> Response:
        return Response(self.css, media_type="text/css", headers=_HEADERS)

    def app(self) -> Starlette:
        get, post = ["GET"], ["POST"]
        routes = [
            Route("/login", self._login, methods=get),
            Route("/", self._guard(self._index), methods=get),
            Route("/lesson/{lesson_id}", self._guard(self._lesson), methods=get),
            Route("/retired", self._guard(self._retired), methods=get),
            Route("/quarantine", self._guard(self._quarantine), methods=get),
            Route(
                "/quarantine/{lesson_id}/approve",
                self._guard(self._approve, post=True),
                methods=post,
            ),
            Route(
                "/quarantine/{lesson_id}/reject", self._guard(self._reject, post=True), methods=post
            ),
            Route("/runs", self._guard(self._runs), methods=get),
            Route("/impact", self._guard(self._impact), methods=get),
            Route("/learn", self._guard(self._learn), methods=get),
            Route("/static/ui.css", self._guard(self._css), methods=get),
        ]
        return Starlette(
            routes=routes,
            exception_handlers={404: self._no_route, 405: self._no_route},
        )

    async def _no_route(self, request: Request, error: Exception) -> Response:
        """Unknown paths and methods get the same guarded page as every refusal (headers,
        CSP), naming nothing from the request."""
        if isinstance(error, HTTPException) and error.status_code == 405:
            return self._refuse(405, "this address does not take that method")
        return self._refuse(404, "no such page")
