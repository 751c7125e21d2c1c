"""A throwaway store for the browser tests: the ledger kit's three recorded runs, a second
revision of G1 (for a diff), a lesson whose title is markup, and two quarantined proposals."""

from __future__ import annotations

from pathlib import Path

from active_memory.models.changes import Mutation, Publication, Rejection
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.runlog import RunLog
from active_memory.store.quarantine import Quarantine, QuarantineEntry
from active_memory.store.sqlite import SqliteStore
from checkouts import built_once, copy_built
from ledger.ledger_kit import G1, R2, record_three_runs
from postmortem.postmortem_kit import REPOSITORY, graph_draft, store_at

HOSTILE = "lesson-01JWAH00000000000000000001"
HELD_OK = "lesson-01JWAQ00000000000000000001"
HELD_NO = "lesson-01JWAQ00000000000000000002"
HOSTILE_TITLE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
G1_NEW_TITLE = "Check the harness environment before editing tests"


def _draft(title: str, path: str = "src/app/config.py") -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(repository=REPOSITORY, files=(path,)),
        title=title,
        recommendation="Read the settings loader before changing a default.",
        evidence=Evidence(run_id="run-ui", references=("exec:e1",), reason="seen in a run"),
    )


def make_ui_store(tmp_path: Path) -> Path:
    """Everything under ``tmp_path``; returns the store file. Built once per test process and
    copied (three recorded runs with their postmortems cost ~1.2 s of CPU; a copy ~0.1 s):
    nothing in it names the folder it was built in except git's reflogs."""
    template, store = built_once("ui-store", _build_ui_store)
    copy_built(template, tmp_path, (f"{run}/checkout" for run in ("first", "second", "third")))
    return tmp_path / store.relative_to(template)


def _build_ui_store(tmp_path: Path) -> Path:
    records = record_three_runs(tmp_path)
    with store_at(tmp_path) as store:
        changed = graph_draft(records[0], G1_NEW_TITLE)
        store.publish(
            Publication(
                run_id="run-adapt",
                mutations=(
                    Mutation(op="upsert", id=G1, expected_revision=1, draft=changed),
                    Mutation(
                        op="upsert", id=HOSTILE, expected_revision=0, draft=_draft(HOSTILE_TITLE)
                    ),
                ),
            )
        )
        path = store.path
    with Quarantine(path) as quarantine:
        quarantine.hold(
            [
                QuarantineEntry(HELD_OK, "run-ui", "repository_discovery",
                                ("instructions:download_not_run",),
                                _draft("Pin the wheel cache before a release"), ""),
                QuarantineEntry(HELD_NO, "run-ui", "repository_discovery",
                                ("secrets:high_entropy",),
                                _draft("A proposal a person turns down"), ""),
            ]
        )  # fmt: skip
    # Rejections on three days, so the runs page charts them by stage over time.
    log = RunLog(tmp_path / "first" / "run-log.jsonl")
    day = 86_400_000
    for offset, stage, code, lesson_id in (
        (0, "schema", "invalid_json", None),
        (0, "references", "unknown_reference", None),
        (day, "source", "cited_file_missing", None),
        (day, "schema", "invalid_json", None),
        (2 * day, "coverage", "missing_id", R2),
    ):
        log.append_rejection(
            records[0].run_id,
            Rejection(stage=stage, role="repository_maintenance", code=code, index=0, id=lesson_id),
            time_ms=1748772000000 + offset,
        )
    log.append_event(
        "quarantine", run_id="run-ui", role="repository_discovery", id=HELD_OK,
        signals=["instructions:download_not_run"], kept=True,
    )  # fmt: skip
    return path


def live_ids(path: Path) -> set[str]:
    with SqliteStore(path, read_only=True) as store:
        return {lesson.id for lesson in store.list_lessons()}
