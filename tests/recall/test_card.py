"""Recall reads cards through protocols: a Lesson, a stored row and a restored index agree."""

from __future__ import annotations

import marshal
from collections.abc import Callable
from pathlib import Path

import pytest

from active_memory.errors import SnapshotError
from active_memory.models.config import ActiveMemoryConfig
from active_memory.recall.card import card_key
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import Caller, RecallSession, RecallSettings
from active_memory.recall.signals import Signals, ToolCall
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.checked_rows import StoredLessons
from active_memory.store.rows import StoreRows
from active_memory.store.sqlite import SqliteStore
from recall.kit import GRAPH, REPOSITORY, ROOT, WORKSPACE, graph_lesson, lesson, seed_store

LESSONS = (
    lesson(1, files=["src/a.py"], identifiers=["load_config"]),
    lesson(
        2, folders=["src"], keyword_groups=[["bedrock", "region"], ["cache", "lease", "expiry"]]
    ),
    lesson(3, identifiers=["configure_bedrock"], repository="forge:github.com/acme/other"),
    graph_lesson(4, "build"),
)
PROBES = (
    Signals(("src/a.py",)),
    Signals(("src/b/c.py",), frozenset({"load_config"})),
    Signals(words=frozenset({"bedrock", "region", "cache", "lease"})),
    Signals(words=frozenset({"cache", "lease", "expiry"})),
    Signals(identifiers=frozenset({"configure_bedrock"})),
)


def matches(index: RecallIndex) -> list[list[tuple[str, int, str]]]:
    return [[(card_key(m.lesson), m.score, m.reason) for m in index.match(probe)]
            for probe in PROBES]  # fmt: skip


def test_the_defaults_a_session_runs_with_are_active_memorys() -> None:
    config, settings = ActiveMemoryConfig(), RecallSettings()
    assert (settings.repository, settings.graph, settings.hook_injection_bytes,
            settings.node_injection_bytes) == (config.repository, config.graph,
                                               config.hook_injection_bytes,
                                               config.node_injection_bytes)  # fmt: skip


def test_stored_rows_index_exactly_as_the_lessons_do(tmp_path: Path) -> None:
    store = tmp_path / "lessons.sqlite3"
    seed_store(store, LESSONS)
    with StoreRows(store) as rows:
        _, cards = rows.repository_cards(REPOSITORY)
    from_rows = RecallIndex(cards, repository=REPOSITORY)
    from_lessons = RecallIndex(LESSONS, repository=REPOSITORY)
    assert matches(from_rows) == matches(from_lessons)
    assert [m for m in matches(from_lessons) if m] != []  # the probes do match something
    assert len(from_rows) == len(from_lessons) == 2


def test_snapshot_rows_index_exactly_as_the_lessons_do_without_decoding_them(
    tmp_path: Path,
) -> None:
    store = tmp_path / "lessons.sqlite3"
    seed_store(store, LESSONS)
    request = SnapshotRequest(RunIdentity("probe", REPOSITORY, GRAPH))
    with SqliteStore(store) as backend:
        stored = backend.snapshot(request).lessons
        assert isinstance(stored, StoredLessons)
        from_rows = RecallIndex.from_entries(
            stored.recall_entries(), stored.graph_lessons(), repository=REPOSITORY
        )
        from_lessons = RecallIndex(LESSONS, repository=REPOSITORY)
        assert matches(from_rows) == matches(from_lessons)
        assert len(from_rows) == 2  # the other repository's card is left out
        assert from_rows.graph_lessons(GRAPH, "build") == from_lessons.graph_lessons(GRAPH, "build")
        assert stored._lessons.count(None) == len(stored) - 1  # only the graph lesson was decoded


def test_a_repository_lesson_among_the_graph_lessons_is_refused() -> None:
    with pytest.raises(ValueError, match="repository lesson"):
        RecallIndex.from_entries((), LESSONS, repository=REPOSITORY)


def test_a_snapshot_row_of_another_shape_is_decoded_and_refused_when_invalid() -> None:
    from active_memory.store.checked_rows import row_checksum
    from active_memory.store.codec import DecodedRows

    good = lesson(5, files=["src/a.py"])
    bad_body = '{"scope": "not a scope", "title": "t", "recommendation": "r"}'
    row = (good.id, 1, bad_body, "{}", "repository", REPOSITORY, None, None)
    stored = StoredLessons([(*row, row_checksum(row))], DecodedRows(4))
    with pytest.raises(SnapshotError, match=good.id):
        list(stored.recall_entries())


def test_a_snapshot_body_is_read_as_json_loads_reads_it() -> None:
    from active_memory.store.checked_rows import row_checksum
    from active_memory.store.codec import DecodedRows, encode_draft

    good = lesson(5, files=["src/a.py"], identifiers=["load_config"])
    body = encode_draft(good.draft).body

    def entries(*bodies: str) -> list[tuple[object, ...]]:
        rows = []
        for text in bodies:
            row = (good.id, 1, text, "{}", "repository", REPOSITORY, None, None)
            rows.append((*row, row_checksum(row)))
        return list(StoredLessons(rows, DecodedRows(4)).recall_entries())

    # Whitespace around a body is JSON all the same; the scanner alone does not skip it.
    assert entries(body) == entries(f" {body}\n") == entries(f"{body} ")
    assert entries(body)[0][2:4] == (good.title, good.recommendation)
    for damaged in (f"{body} {{}}", f"{body},{body}", body[:-1], ""):
        with pytest.raises(SnapshotError, match=good.id):
            entries(damaged)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', ' \t{"a": [1, 2.5, null, true]}\r\n', '{"a": 1, "a": 2}', '[NaN, -Infinity]',
     '"x"', "", "   ", '{"a": 1} {}', '{"a": 1},', "\ufeff{}", '{"a": "\u0007"}',
     '{"a": "\\ud800"}', "[" * 100_000, '{"a" 1}', "01", "1e999", '"\\u00e9t\u00e9"', "\u00a0{}"],
)  # fmt: skip
def test_the_fallback_reads_a_row_body_as_json_loads_does(text: str) -> None:
    """The hook fallback decodes bodies with json's C scanner alone: same value, or refused
    (ValueError, RecursionError or StopIteration, which ``decode_card`` all take as refusal)
    wherever json.loads refuses."""
    import json

    from active_memory.store import rows

    def outcome(loads: Callable[[str], object]) -> object:
        try:
            value = loads(text)
        except (ValueError, RecursionError, StopIteration):
            return "refused"
        return repr(value)  # NaN is not equal to itself; its repr is

    assert outcome(rows._json_loads) == outcome(json.loads)


def test_an_index_restored_from_its_state_matches_as_the_original() -> None:
    original = RecallIndex(LESSONS, repository=REPOSITORY)
    restored = RecallIndex.from_state(marshal.loads(marshal.dumps(original.state())))
    assert matches(restored) == matches(original)
    assert (len(restored), restored.repository) == (len(original), REPOSITORY)
    assert restored.graph_lessons(GRAPH, "build") == ()  # graph lessons are not carried
    assert len(original.graph_lessons(GRAPH, "build")) == 1


def test_a_session_frames_restored_cards_as_it_frames_lessons() -> None:
    call = ToolCall("Read", {"file_path": f"{WORKSPACE}/src/a.py"}, WORKSPACE)
    index = RecallIndex(LESSONS, repository=REPOSITORY)
    texts = []
    for served in (index, RecallIndex.from_state(index.state())):
        session = RecallSession(served, ROOT, manifest=False)
        recall = session.recall(call, Caller("n", "c"))
        assert recall.receipt is None
        assert recall.commit() == ()
        texts.append(recall.text)
    assert texts[0] == texts[1] != ""
