"""Revisions stay within 2**53 - 1 and generations within what the store holds (int64), checked
at every entry and every write: a line, a mutation, a revert, a replacing import and the store's
own next revision or generation; ``store check`` reports a stored revision past the bound."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.errors import LessonValidationError, PublicationError
from active_memory.limits import LIMITS
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Lesson
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from factories import make_draft
from hostile import one_sentence_or_success

LESSON = "lesson-01J00000000000000000000001"
TOP = LIMITS.stored_integer_max


def _publish(store: SqliteStore, expected: int, title: str = "Run the schema check") -> None:
    store.publish(
        Publication(
            run_id="run-2",
            mutations=(
                Mutation(
                    op="upsert", id=LESSON, expected_revision=expected, draft=make_draft(title)
                ),
            ),
        )
    )


def _line(revision: int) -> str:
    return Lesson.from_draft(LESSON, revision, make_draft()).model_dump_json()


HIGHEST = LIMITS.revision_max
AT_THE_BOUND = f"lesson {LESSON!r} is at the highest revision ({HIGHEST}) and cannot change"


def test_a_line_at_the_revision_bound_imports_and_then_cannot_change(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        store.import_lines([_line(HIGHEST)])
        with pytest.raises(PublicationError, match=re.escape(AT_THE_BOUND)):
            _publish(store, HIGHEST, "A changed title")
        with pytest.raises(PublicationError, match=re.escape(AT_THE_BOUND)):
            store.publish(
                Publication(
                    run_id="run-3",
                    mutations=(Mutation(op="retire", id=LESSON, expected_revision=HIGHEST),),
                )
            )
        assert store.get(LESSON).revision == HIGHEST
    tombstone = {"id": LESSON, "revision": HIGHEST, "retired": True, "kind": "graph"}
    with SqliteStore(tmp_path / "retired.sqlite3") as store:
        store.import_lines([json.dumps(tombstone)])
        with pytest.raises(PublicationError, match=re.escape(AT_THE_BOUND)):
            store.purge(LESSON)
        assert store.list_retired()[0].revision == HIGHEST


def test_a_replace_import_at_the_bound_is_refused_and_the_export_imports_again(
    tmp_path: Path,
) -> None:
    store = tmp_path / "state" / "lessons.sqlite3"
    first = tmp_path / "first.jsonl"
    first.write_text(_line(HIGHEST) + "\n")
    changed = tmp_path / "changed.jsonl"
    changed.write_text(Lesson.from_draft(LESSON, 1, make_draft("Another title")).model_dump_json())

    def cli(*args: str) -> Result:
        return run_cli([*args, "--store", str(store)])

    assert cli("lessons", "import", str(first)).exit_code == 0
    replaced = cli("lessons", "import", str(changed), "--replace")
    assert one_sentence_or_success(replaced, failure_codes=(1,))
    assert AT_THE_BOUND in replaced.stderr
    exported = cli("lessons", "export")
    assert exported.exit_code == 0, exported.stderr
    (tmp_path / "export.jsonl").write_text(exported.stdout)
    again = run_cli(["lessons", "import", str(tmp_path / "export.jsonl"),
                                      "--store", str(tmp_path / "other.sqlite3")])  # fmt: skip
    assert again.exit_code == 0, again.stderr


def test_a_line_past_the_revision_bound_is_refused_before_the_store_is_touched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lessons.sqlite3"
    with SqliteStore(path) as store:
        line = json.dumps({**json.loads(_line(1)), "revision": 2**63})
        with pytest.raises(LessonValidationError, match="revisions go up to"):
            store.import_lines([line])
        tombstone = json.dumps({"id": LESSON, "revision": 2**64, "retired": True, "kind": "graph"})
        with pytest.raises(LessonValidationError, match="must be an integer from 1 to"):
            store.import_lines([tombstone])
        assert store.generation() == 0


def test_a_mutation_naming_a_revision_past_the_bound_is_refused() -> None:
    with pytest.raises(LessonValidationError, match="must be at most"):
        Mutation(op="upsert", id=LESSON, expected_revision=2**63, draft=make_draft())


@pytest.fixture
def store_at_the_top(tmp_path: Path) -> Path:
    """A lesson at the largest revision SQLite holds: only an edit outside the toolkit gets
    there, and then the next revision cannot be stored."""
    path = tmp_path / "state" / "lessons.sqlite3"
    with SqliteStore(path) as store:
        store.import_lines([_line(1)])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE records SET revision = ?", (TOP,))
    conn.commit()
    conn.close()
    return path


def test_writing_past_the_stored_bound_is_a_publication_error_not_an_overflow(
    store_at_the_top: Path,
) -> None:
    with SqliteStore(store_at_the_top) as store:
        assert store.get(LESSON).revision == TOP
        # A mutation cannot even name this revision; a revert computes the next one itself.
        with pytest.raises(PublicationError, match="is at the highest revision"):
            store.revert(LESSON, 1)
        assert store.get(LESSON).revision == TOP


def test_a_replace_import_past_the_stored_bound_is_one_sentence(
    store_at_the_top: Path, tmp_path: Path
) -> None:
    source = tmp_path / "changed.jsonl"
    changed = Lesson.from_draft(LESSON, 1, make_draft("Another title"))
    source.write_text(changed.model_dump_json() + "\n")
    result = run_cli(
        ["lessons", "import", str(source), "--replace", "--store", str(store_at_the_top)]
    )
    assert one_sentence_or_success(result, failure_codes=(1,))
    assert "is at the highest revision" in result.stderr


def test_store_check_reports_a_revision_past_the_bound(store_at_the_top: Path) -> None:
    result = run_cli(["store", "check", "--store", str(store_at_the_top)])
    assert result.exit_code == 1
    assert f"stored lesson {LESSON!r} is at revision {TOP}, past the highest revision" in (
        result.stdout + result.stderr
    )


def test_a_generation_at_the_stored_bound_refuses_the_next_batch(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    with SqliteStore(path) as store:
        store.import_lines([_line(1)])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET generation = ?", (TOP,))
    conn.commit()
    conn.close()
    with SqliteStore(path) as store, pytest.raises(PublicationError, match="generation would"):
        _publish(store, 1, "A changed title")


@pytest.mark.parametrize(
    "extra", [["--to", str(2**63)], ["--to", "1", "--expected", str(2**63)]], ids=["to", "expected"]
)
def test_revert_options_past_the_bound_are_bad_input(tmp_path: Path, extra: list[str]) -> None:
    store = tmp_path / "s.sqlite3"
    result = run_cli(["lessons", "revert", LESSON, *extra, "--store", str(store)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not store.exists()
