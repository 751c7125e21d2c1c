"""Stored content decoded once: the live listing and the read of every history share it; a
purge takes the purged lesson's text out of that memory."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, NoneType

import pytest
from engines import Store

from active_memory.models.changes import Mutation, Publication
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.codec import DecodedContent, RecordError, decode_draft, encode_draft
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY, make_draft, publish_new

SNAPSHOT = SnapshotRequest(RunIdentity("run-1", REPOSITORY, None), repository=True, graph=False)


def _stored(title: str) -> tuple[str, str]:
    encoded = encode_draft(make_draft(title))
    return encoded.body, encoded.evidence


def test_the_same_text_is_validated_once_and_gives_the_same_draft() -> None:
    contents = DecodedContent(capacity=8)
    body, evidence = _stored("Decoded once")
    first = contents.draft(body, evidence)
    again = contents.draft(body, evidence)
    assert first == again == decode_draft(body, evidence)
    assert again.scope is first.scope  # the remembered parts, not a second validation


def test_other_text_decodes_afresh() -> None:
    contents = DecodedContent(capacity=8)
    one, other = contents.draft(*_stored("One card")), contents.draft(*_stored("Another card"))
    assert (one.title, other.title) == ("One card", "Another card")


def test_invalid_content_is_refused_every_time_and_never_remembered() -> None:
    contents = DecodedContent(capacity=8)
    body = '{"scope": "not a scope", "title": "t", "recommendation": "r"}'
    for _ in range(2):
        with pytest.raises(RecordError, match="fails lesson validation"):
            contents.draft(body, "{}")
    with pytest.raises(RecordError, match="no body"):
        contents.draft(None, "{}")


def test_past_its_capacity_the_memory_starts_over() -> None:
    contents = DecodedContent(capacity=2)
    stored = [_stored(f"Card {n}") for n in range(3)]
    first = contents.draft(*stored[0])
    contents.draft(*stored[1])
    contents.draft(*stored[2])  # a third content: the memory starts over with it
    assert contents.draft(*stored[0]).scope is not first.scope
    assert contents.draft(*stored[0]) == first


def test_a_store_decodes_a_live_revision_once_for_its_listing_and_its_histories(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lessons.sqlite3"
    with SqliteStore(path) as store:
        (lesson_id,) = publish_new(store, make_draft("Listed, then read in its history"))
    with SqliteStore(path, read_only=True) as store:
        (live,) = store.list_lessons()
        (entry,) = store.histories()
    assert entry.draft is not None
    assert entry.draft.scope is live.scope
    with SqliteStore(path, read_only=True) as fresh:
        assert list(fresh.histories()) == [entry] == list(fresh.history(lesson_id))


def _texts(memory: object) -> Iterator[str]:
    """Every string reachable from ``memory`` through containers and objects."""
    seen: set[int] = set()
    stack: list[object] = [memory]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type | ModuleType):
            continue
        seen.add(id(item))
        if isinstance(item, str):
            yield item
        elif not isinstance(item, bytes | int | float | bool | NoneType):
            stack.extend(gc.get_referents(item))


def test_forgotten_content_is_dropped_and_never_remembered_again() -> None:
    contents = DecodedContent(capacity=8)
    stored = _stored("Purged card")
    first = contents.draft(*stored)
    contents.forget([stored])
    assert not any("Purged card" in text for text in _texts(contents))
    again = contents.draft(*stored)  # a read begun before the purge still decodes it…
    assert again == first
    assert again.scope is not first.scope
    assert not any("Purged card" in text for text in _texts(contents))  # …but it is not kept


def test_a_purge_leaves_no_text_of_the_lesson_in_the_stores_memory(store: Store) -> None:
    secret = "Rotate the leaked deploy key"
    kept, purged = publish_new(store, make_draft("Still here"), make_draft(secret))
    assert len(store.list_lessons()) == len(list(store.snapshot(SNAPSHOT).lessons)) == 2
    assert len(list(store.histories())) == 2
    store.publish(
        Publication(
            run_id="retire", mutations=(Mutation(op="retire", id=purged, expected_revision=1),)
        )
    )
    store.purge(purged)
    memories = (store._contents, store._decoded)  # the memories under test
    assert not any(secret in text for memory in memories for text in _texts(memory))
    assert any("Still here" in text for text in _texts(store._contents))
    assert [lesson.id for lesson in store.list_lessons()] == [kept]
