"""Every lesson's history from the memory service: pages followed in order, a page that does
not move forward refused rather than followed for ever, and a service older than the paged
route read one lesson at a time (at the HTTP layer)."""

from __future__ import annotations

import json

import httpx
import pytest

from active_memory.errors import StoreError
from active_memory.impact.measure import measure_impact
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Lesson
from active_memory.store.remote import RemoteBackend
from active_memory.store.results import HistoryEntry
from active_memory.store.wire import HistoryEntryWire
from factories import make_draft

URL = "https://memory.example.com"
IDS = sorted(new_lesson_id() for _ in range(3))


def _entry(lesson_id: str) -> dict[str, object]:
    entry = HistoryEntry(id=lesson_id, revision=1, op="upsert", generation=1, run_id="run-1",
                         time="2025-06-01T00:00:00.000Z", draft=make_draft())  # fmt: skip
    return HistoryEntryWire.of(entry).model_dump(mode="json")


def _backend(
    pages: dict[str | None, tuple[list[str], str | None]], asked: list[object]
) -> RemoteBackend:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/histories"
        after = json.loads(request.content).get("after")
        asked.append(after)
        ids, following = pages[after]
        return httpx.Response(200, json={"entries": [_entry(i) for i in ids], "next": following})

    return RemoteBackend(URL, token="t0ken", transport=httpx.MockTransport(answer))


def test_pages_are_followed_until_none_is_left() -> None:
    asked: list[object] = []
    pages = {None: (IDS[:2], IDS[1]), IDS[1]: (IDS[2:], None)}
    with _backend(pages, asked) as backend:
        assert [entry.id for entry in backend.histories()] == IDS
    assert asked == [None, IDS[1]]


def test_a_page_that_does_not_move_forward_is_refused() -> None:
    asked: list[object] = []
    pages = {None: (IDS[:1], IDS[1]), IDS[1]: (IDS[1:2], IDS[0])}
    with _backend(pages, asked) as backend, pytest.raises(StoreError, match="does not move"):
        list(backend.histories())
    assert asked == [None, IDS[1]]


def _older_service(asked: list[str]) -> RemoteBackend:
    """A service from before ``POST /v1/histories``: that route is unknown (404 in plain text,
    as the web framework answers), the per-lesson routes answer. IDS[1] is refused (a past
    revision outside the token's scope); IDS[2] is a tombstone."""
    live = Lesson(id=IDS[0], revision=1, **make_draft("Live").model_dump())

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        if request.url.path == "/v1/histories":
            return httpx.Response(404, text="Not Found")
        if request.url.path == "/v1/lessons":
            return httpx.Response(200, json={"lessons": [live.model_dump(mode="json")]})
        if request.url.path == "/v1/retired":
            tombstones = [[IDS[2], 2, "repository"], [IDS[1], 2, "repository"]]
            return httpx.Response(200, json={"tombstones": tombstones})
        assert request.url.path == "/v1/history"
        lesson_id = json.loads(request.content)["id"]
        if lesson_id == IDS[1]:
            refusal = {"error": "out_of_scope", "message": "no", "subject": "lesson", "scope": "s"}
            return httpx.Response(403, json=refusal)
        return httpx.Response(200, json={"entries": [_entry(lesson_id)]})

    return RemoteBackend(URL, token="t0ken", transport=httpx.MockTransport(answer))


def test_a_service_without_the_paged_route_is_read_one_lesson_at_a_time() -> None:
    asked: list[str] = []
    with _older_service(asked) as backend:
        assert [entry.id for entry in backend.histories()] == [IDS[0], IDS[2]]
        report = measure_impact(backend, [])
    assert asked[:3] == ["/v1/histories", "/v1/lessons", "/v1/retired"]
    assert asked[3:6] == ["/v1/history"] * 3
    assert [lesson.id for lesson in report.lessons] == [IDS[0]]


def test_a_404_past_the_first_page_is_an_error_not_a_fallback() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content).get("after") is None:
            return httpx.Response(200, json={"entries": [_entry(IDS[0])], "next": IDS[0]})
        return httpx.Response(404, text="Not Found")

    transport = httpx.MockTransport(answer)
    backend = RemoteBackend(URL, token="t0ken", transport=transport)
    with backend, pytest.raises(StoreError, match="HTTP 404 without an explanation"):
        list(backend.histories())


def test_a_cookie_the_service_sets_is_neither_kept_nor_sent_back() -> None:
    """The token is the client's one credential (a proxy's session cookie is not echoed)."""
    sent: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("cookie"))
        return httpx.Response(
            200, json={"generation": 7}, headers={"set-cookie": "session=abc; Path=/"}
        )

    with RemoteBackend(URL, token="t0ken", transport=httpx.MockTransport(answer)) as backend:
        assert backend.generation() == 7
        assert backend.generation() == 7
    assert sent == [None, None]
