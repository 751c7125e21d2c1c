from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from engines import Engine, Store

from active_memory.errors import SnapshotError
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.store.backend import ActiveMemoryBackend, RunIdentity, SnapshotRequest
from active_memory.store.codec import canonical_json
from active_memory.store.sqlite import SqliteStore
from factories import GRAPH_HASH, REPOSITORY, make_draft, make_graph_draft

OTHER_REPOSITORY = "forge:example.com/acme/other"
OTHER_GRAPH = "0" * 64


def _publish(store: Store, drafts: dict[str, LessonDraft]) -> dict[str, str]:
    ids = {name: new_lesson_id() for name in drafts}
    mutations = tuple(
        Mutation(op="upsert", id=ids[name], expected_revision=0, draft=d)
        for name, d in drafts.items()
    )
    store.publish(Publication(run_id="run-1", mutations=mutations))
    return ids


@pytest.fixture
def ids(store: Store) -> dict[str, str]:
    return _publish(
        store,
        {
            "repo": make_draft(),
            "other_repo": make_draft(repository=OTHER_REPOSITORY),
            "graph": make_graph_draft(),
            "graph_same_repo": make_graph_draft(node_id="worker", repository=REPOSITORY),
            "graph_other_repo": make_graph_draft(repository=OTHER_REPOSITORY),
            "other_graph": make_graph_draft(graph_hash=OTHER_GRAPH),
        },
    )


def _names(store: Store, ids: dict[str, str], request: SnapshotRequest) -> set[str]:
    by_id = {v: k for k, v in ids.items()}
    return {by_id[lesson.id] for lesson in store.snapshot(request).lessons}


def test_store_implements_the_backend_protocol(store: Store) -> None:
    assert isinstance(store, ActiveMemoryBackend)


def test_snapshot_scopes_repository_and_graph_lessons(store: Store, ids: dict[str, str]) -> None:
    identity = RunIdentity("run-2", repository=REPOSITORY, graph_hash=GRAPH_HASH)
    assert _names(store, ids, SnapshotRequest(identity)) == {"repo", "graph", "graph_same_repo"}


def test_scope_flags_switch_each_scope_off(store: Store, ids: dict[str, str]) -> None:
    identity = RunIdentity("run-2", repository=REPOSITORY, graph_hash=GRAPH_HASH)
    assert _names(store, ids, SnapshotRequest(identity, graph=False)) == {"repo"}
    assert _names(store, ids, SnapshotRequest(identity, repository=False)) == {
        "graph",
        "graph_same_repo",
    }
    assert _names(store, ids, SnapshotRequest(identity, repository=False, graph=False)) == set()


def test_run_without_repository_sees_only_unqualified_graph_lessons(
    store: Store, ids: dict[str, str]
) -> None:
    identity = RunIdentity("run-2", graph_hash=GRAPH_HASH)
    assert _names(store, ids, SnapshotRequest(identity)) == {"graph"}


def test_snapshot_is_sorted_by_id_and_carries_the_generation(
    store: Store, ids: dict[str, str]
) -> None:
    store.publish(
        Publication(
            run_id="run-3",
            mutations=(
                Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()),
            ),
        )
    )
    snapshot = store.snapshot(SnapshotRequest(RunIdentity("r", REPOSITORY, GRAPH_HASH)))
    assert [lesson.id for lesson in snapshot.lessons] == sorted(x.id for x in snapshot.lessons)
    assert len(snapshot.lessons) == 4
    assert snapshot.generation == store.generation() == 2


def test_retired_lessons_leave_the_snapshot(store: Store, ids: dict[str, str]) -> None:
    store.publish(
        Publication(
            run_id="run-2", mutations=(Mutation(op="retire", id=ids["repo"], expected_revision=1),)
        )
    )
    identity = RunIdentity("run-3", repository=REPOSITORY, graph_hash=GRAPH_HASH)
    assert _names(store, ids, SnapshotRequest(identity)) == {"graph", "graph_same_repo"}


def test_stored_body_that_fails_validation_fails_the_snapshot(
    engine: Engine, store: Store, ids: dict[str, str]
) -> None:
    engine.raw(
        store,
        "UPDATE records SET body = replace(body, 'Run the schema', 'Run\tthe schema') WHERE id = ?",
        (ids["repo"],),
    )
    with pytest.raises(SnapshotError, match=ids["repo"]):
        store.snapshot(SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY)))


def _set_scope(key: str, value: object) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    return lambda card, proof: card["scope"].__setitem__(key, value)


def _set_card(key: str, value: object) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    return lambda card, proof: card.__setitem__(key, value)


def _set_proof(key: str, value: object) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    return lambda card, proof: proof.__setitem__(key, value)


@pytest.mark.parametrize(
    "corrupt",
    [
        _set_scope("files", ["src/../app.py"]),
        _set_scope("files", ["src/*.py"]),
        _set_scope("files", ["/src/app.py"]),
        _set_scope("files", ["src/app.py", "src/app.py"]),
        _set_scope("files", ["src/\u2028app.py"]),
        _set_scope("files", [1]),
        _set_scope("identifiers", ["ab"]),
        _set_scope("keyword_groups", [["schema", "the"]]),
        _set_scope("color", "red"),
        _set_card("title", "\u00e9" * 49),
        _set_card("title", "Run\u0085the schema"),
        _set_card("title", "   "),
        _set_card("recommendation", "x" * 641),
        _set_card("extra", "field"),
        _set_proof("references", ["nope:1"]),
        _set_proof("references", ["exec:e1", "exec:e1"]),
        _set_proof("references", ["exec:e\t1"]),
        _set_proof("references", ["exec:" + "e" * 296]),
        _set_proof("run_id", ""),
        _set_proof("extra", "field"),
    ],
    ids=[
        "dotdot-path", "glob-path", "absolute-path", "repeated-file", "separator-in-path",
        "non-string-file", "short-identifier", "broad-keyword", "unknown-scope-key",
        "title-over-byte-limit", "title-with-next-line", "blank-title", "long-recommendation",
        "unknown-card-key", "unknown-reference-kind", "repeated-reference", "tab-in-reference",
        "long-reference", "empty-run-id", "unknown-evidence-key",
    ],
)  # fmt: skip
@pytest.mark.parametrize("read_before", [False, True], ids=["first-read", "read-before"])
def test_stored_row_that_breaks_any_card_rule_fails_the_snapshot(
    engine: Engine,
    store: Store,
    ids: dict[str, str],
    corrupt: Callable[[dict[str, Any], dict[str, Any]], None],
    read_before: bool,
) -> None:
    request = SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY))
    if read_before:  # a row this store has decoded before is validated again once it changes
        assert [lesson.id for lesson in store.snapshot(request).lessons] == [ids["repo"]]
    [(body, evidence)] = engine.raw(
        store, "SELECT body, evidence FROM records WHERE id = ?", (ids["repo"],)
    )
    card, proof = json.loads(body), json.loads(evidence)
    corrupt(card, proof)
    engine.raw(
        store,
        "UPDATE records SET body = ?, evidence = ? WHERE id = ?",
        (canonical_json(card), canonical_json(proof), ids["repo"]),
    )
    with pytest.raises(SnapshotError, match=ids["repo"]):
        store.snapshot(request)


@pytest.mark.parametrize("read_before", [False, True], ids=["first-read", "read-before"])
def test_scope_columns_that_disagree_with_the_body_fail_the_snapshot(
    engine: Engine, store: Store, ids: dict[str, str], read_before: bool
) -> None:
    if read_before:
        store.snapshot(SnapshotRequest(RunIdentity("run-2", repository=OTHER_REPOSITORY)))
    engine.raw(
        store, "UPDATE records SET repository = ? WHERE id = ?", (REPOSITORY, ids["other_repo"])
    )
    with pytest.raises(SnapshotError, match="scope columns"):
        store.snapshot(SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY)))


def test_snapshot_sees_each_batch_committed_by_another_connection(
    engine: Engine, store: Store, ids: dict[str, str]
) -> None:
    identity = RunIdentity("run-2", repository=REPOSITORY, graph_hash=GRAPH_HASH)
    with engine.open() as writer:
        for n in range(5):
            snapshot = store.snapshot(SnapshotRequest(identity))
            writer.publish(
                Publication(
                    run_id=f"w{n}",
                    mutations=(
                        Mutation(
                            op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
                        ),
                    ),
                )
            )
            assert len(snapshot.lessons) == 3 + n
            assert snapshot.generation == 1 + n


def test_rows_unchanged_since_the_last_snapshot_give_the_same_lessons(
    store: Store, ids: dict[str, str]
) -> None:
    request = SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY, graph_hash=GRAPH_HASH))
    first = store.snapshot(request).by_id()
    mutation = Mutation(
        op="upsert", id=ids["repo"], expected_revision=1, draft=make_draft("Run the check first")
    )
    store.publish(Publication(run_id="run-2", mutations=(mutation,)))
    second = store.snapshot(request).by_id()
    assert first.keys() == second.keys()
    for lesson_id, lesson in second.items():
        if lesson_id == ids["repo"]:
            assert (lesson.revision, lesson.title) == (2, "Run the check first")
        else:
            assert lesson is first[lesson_id]


def test_a_row_rewritten_outside_the_store_with_valid_content_is_refused_not_stale(
    engine: Engine, store: Store, ids: dict[str, str]
) -> None:
    # Valid content edited by hand is no longer the row that was validated and checksummed:
    # the snapshot refuses it (never the lesson this instance decoded before), and store check
    # names it, so no reader serves either version silently.
    request = SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY))
    assert store.snapshot(request).lessons[0].title.startswith("Run the schema")
    engine.raw(
        store,
        "UPDATE records SET body = replace(body, 'Run the schema', 'Run the lint') WHERE id = ?",
        (ids["repo"],),
    )
    with pytest.raises(SnapshotError, match=f"{ids['repo']}.*changed outside active-memory"):
        store.snapshot(request)


@pytest.mark.sqlite_only
def test_store_check_names_a_row_rewritten_outside_the_store_by_id(
    store: SqliteStore, ids: dict[str, str]
) -> None:
    with sqlite3.connect(store.path) as raw:
        raw.execute(
            "UPDATE records SET body = replace(body, 'Run the schema', 'Run the lint') "
            "WHERE id = ?",
            (ids["repo"],),
        )
    raw.close()
    report = store.check()
    assert not report.ok
    assert [p for p in report.problems if ids["repo"] in p and "checksum" in p]
    assert not [p for p in report.problems if "Run the lint" in p]  # ids, never lesson text


def test_snapshot_lessons_behave_as_a_tuple_decoded_on_first_read(
    store: Store, ids: dict[str, str]
) -> None:
    identity = RunIdentity("run-2", repository=REPOSITORY, graph_hash=GRAPH_HASH)
    lessons = store.snapshot(SnapshotRequest(identity)).lessons
    listed = tuple(sorted(
        (lesson for lesson in store.list_lessons()
         if lesson.id in {ids["repo"], ids["graph"], ids["graph_same_repo"]}),
        key=lambda lesson: lesson.id,
    ))  # fmt: skip
    assert len(lessons) == 3
    assert lessons == listed
    assert tuple(lessons) == listed
    assert lessons[-1] == listed[-1]
    assert lessons[1:] == listed[1:]
    assert lessons[0] is lessons[0]  # decoded once, then the same frozen lesson
    with pytest.raises(IndexError):
        lessons[3]


def test_a_rule_tightened_after_a_row_was_written_fails_on_read_naming_the_id(
    engine: Engine, store: Store, ids: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checksum proves a row is what was written, not that today's rules accept it: the
    # lesson is still validated when decoded, and a failure names the id instead of a partial
    # list.
    from active_memory.store import codec

    def refuse(row: tuple[object, ...]) -> Any:
        raise codec.RecordError("fails lesson validation (title: a rule of this version)")

    with engine.open() as reader:  # decoding needs no connection
        lessons = reader.snapshot(SnapshotRequest(RunIdentity("run-2", repository=REPOSITORY)))
    monkeypatch.setattr(codec, "decode_lesson", refuse)
    with pytest.raises(SnapshotError, match=ids["repo"]):
        list(lessons.lessons)
