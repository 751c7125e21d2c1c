"""``lessons retire ID`` publishes a checked retirement: a tombstone, or a conflict."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result

from active_memory.models.changes import Mutation, Publication
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from factories import make_draft

LESSON = "lesson-01JWNF15X00000000000000001"


def _cli(*args: str | Path) -> Result:
    return run_cli([str(arg) for arg in args])


def _store(tmp_path: Path, revisions: int = 1) -> Path:
    path = tmp_path / "s.sqlite3"
    with SqliteStore(path) as store:
        for revision in range(revisions):
            mutation = Mutation(op="upsert", id=LESSON, expected_revision=revision,
                                draft=make_draft(title=f"Title {revision}"))  # fmt: skip
            store.publish(Publication(run_id="run-1", mutations=(mutation,)))
    return path


def test_retire_tombstones_the_live_revision(tmp_path: Path) -> None:
    store = _store(tmp_path, revisions=2)
    result = _cli("lessons", "retire", LESSON, "--store", store)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{LESSON} retired at revision 2 (tombstone revision 3); generation 3\n"
    with SqliteStore(store) as opened:
        assert opened.list_lessons() == ()
        assert [t.id for t in opened.list_retired()] == [LESSON]


def test_retire_json_names_the_revisions(tmp_path: Path) -> None:
    result = _cli("lessons", "retire", LESSON, "--store", _store(tmp_path), "--json")
    assert json.loads(result.stdout) == {
        "id": LESSON, "retired_revision": 1, "revision": 2, "generation": 2,
    }  # fmt: skip


def test_a_stale_expected_revision_is_a_conflict_and_nothing_is_written(tmp_path: Path) -> None:
    store = _store(tmp_path, revisions=2)
    result = _cli("lessons", "retire", LESSON, "--expected", "1", "--store", store)
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: revision conflict, nothing published: {LESSON} expected revision 1, found 2. "
        "Refresh the snapshot and decide again.\n"
    )
    with SqliteStore(store) as opened:
        assert [lesson.revision for lesson in opened.list_lessons()] == [2]


def test_a_retired_lesson_cannot_be_retired_again(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _cli("lessons", "retire", LESSON, "--store", store).exit_code == 0
    again = _cli("lessons", "retire", LESSON, "--store", store)
    assert again.exit_code == 1
    assert f"lesson {LESSON!r} was retired at revision 2" in again.stderr
