"""Every lesson's history from the memory service: pages followed in order, and a page that
does not move forward refused rather than followed for ever (at the HTTP layer)."""

from __future__ import annotations

import json

import httpx
import pytest

from active_memory.errors import StoreError
from active_memory.models.ids import new_lesson_id
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
