"""The store's memory init receipts: written with the publication, returned instead of a
second publication, absent when the publication failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.errors import RevisionConflict
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.store.sqlite import SqliteStore


def _publication(expected: int = 0, lesson_id: str | None = None) -> Publication:
    draft = LessonDraft(
        scope=RepositoryScope(repository="forge:github.com/acme/alpha", files=("app/a.py",)),
        title="A lesson", recommendation="Read app/a.py before changing it.",
        evidence=Evidence(run_id="memory-init-s", references=("exec:e1",), reason="seen"),
    )  # fmt: skip
    return Publication(run_id="memory-init-s", mutations=(
        Mutation(op="upsert", id=lesson_id or new_lesson_id(), expected_revision=expected,
                 draft=draft),))  # fmt: skip


def test_a_second_publication_of_the_same_session_returns_the_first_receipt(
    tmp_path: Path,
) -> None:
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        first, fresh = store.publish_once(_publication(), "session-1")
        assert fresh
        assert store.init_receipt("session-1") == first
        again, fresh_again = store.publish_once(_publication(), "session-1")
        assert (again, fresh_again) == (first, False)
        assert store.generation() == 1
        assert len(store.list_lessons()) == 1
        store.drop_init_receipt("session-1")
        assert store.init_receipt("session-1") is None


def test_a_refused_publication_leaves_no_receipt(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        with pytest.raises(RevisionConflict):
            store.publish_once(_publication(expected=3), "session-2")
        assert store.init_receipt("session-2") is None
        assert store.generation() == 0
