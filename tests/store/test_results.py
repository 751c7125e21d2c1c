"""The store's results as models: keyword construction, frozen, and the JSON the CLI prints."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from active_memory.errors import LessonValidationError
from active_memory.store.results import (
    HistoryEntry,
    ImportReport,
    PurgeReceipt,
    StoreCheck,
    Tombstone,
)
from factories import make_draft

REVISION: dict[str, Any] = {"id": "L1", "generation": 5, "run_id": "run-1", "time": "t"}


def test_a_history_entry_names_its_draft_lesson_and_says_whether_it_was_erased() -> None:
    draft = make_draft()
    written = HistoryEntry(**REVISION, revision=1, op="upsert", draft=draft)
    assert written.model_dump(mode="json") == {
        **REVISION, "revision": 1, "op": "upsert", "source_revision": None, "erased": False,
        "lesson": draft.model_dump(mode="json"),
    }  # fmt: skip
    erased = HistoryEntry(**REVISION, revision=2, op="revert", draft=None, source_revision=1)
    assert (erased.erased, erased.model_dump(mode="json")["erased"]) == (True, True)
    assert erased.model_dump(mode="json")["lesson"] is None
    retired = HistoryEntry(**REVISION, revision=3, op="retire", draft=None)
    assert retired.model_dump(mode="json")["erased"] is False


def test_a_tombstone_line_says_it_is_retired() -> None:
    tombstone = Tombstone(id="L1", revision=4, kind="repository")
    assert tombstone.model_dump(mode="json") == {
        "id": "L1", "revision": 4, "kind": "repository", "retired": True,
    }  # fmt: skip


def test_a_store_check_adds_its_verdict() -> None:
    counts = {"path": "/s", "schema_version": "3", "migrations": 3, "generation": 1, "live": 2,
              "tombstones": 0, "history_rows": 3, "content_bytes": 10,
              "file_bytes": 4096}  # fmt: skip
    clean = StoreCheck(**counts, problems=())
    assert clean.model_dump(mode="json") == {**counts, "problems": [], "ok": True}
    damaged = StoreCheck(**counts, problems=("row 3 is damaged",))
    assert damaged.model_dump(mode="json")["ok"] is False


def test_an_import_report_and_a_purge_receipt_are_their_fields() -> None:
    report = ImportReport(generation=2, created=("a",), retired=("b",))
    assert report.changed == 2
    assert report.model_dump(mode="json") == {
        "generation": 2, "created": ["a"], "replaced": [], "retired": ["b"], "unchanged": [],
    }  # fmt: skip
    receipt = PurgeReceipt(id="L1", revision=3, generation=9, erased_revisions=2, scrubbed=True)
    assert receipt.model_dump(mode="json") == {
        "id": "L1", "revision": 3, "generation": 9, "erased_revisions": 2, "scrubbed": True,
    }  # fmt: skip


def test_results_are_built_by_keyword_frozen_and_strict() -> None:
    with pytest.raises(TypeError):
        Tombstone("L1", 4, "repository")  # type: ignore[misc]
    tombstone = Tombstone(id="L1", revision=4, kind="repository")
    with pytest.raises(ValidationError):
        tombstone.revision = 5  # type: ignore[misc]
    with pytest.raises(LessonValidationError, match="revision"):
        Tombstone(id="L1", revision="4", kind="repository")  # type: ignore[arg-type]
