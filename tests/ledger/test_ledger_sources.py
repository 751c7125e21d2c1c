"""The ledger's other sources: a quarantine hold then a person's approval, refused answers,
exposure files outside runs, latched outcomes, and files it cannot read."""

from __future__ import annotations

import os
from pathlib import Path

from active_memory.latch import latch_outcome, run_state_dir
from active_memory.ledger import lesson_ledger, load_exposures, load_sources
from active_memory.ledger.sources import LedgerSources
from active_memory.models.changes import Rejection
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.models.runs import Outcome
from active_memory.runlog import RunLog
from active_memory.store.quarantine import REVIEW_RUN, QuarantineEntry
from active_memory.store.sqlite import SqliteStore

HELD = "lesson-01JWAQ00000000000000000007"
REPOSITORY = "forge:github.com/example/order-service"


def _draft() -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(repository=REPOSITORY, files=("src/app/config.py",)),
        title="Pin the wheel cache before a release",
        recommendation="Read the settings loader before changing a default.",
        evidence=Evidence(run_id="run-q", references=("exec:e1",), reason="seen in a run"),
    )


def test_an_approved_proposal_shows_its_hold_and_its_review(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    log = RunLog(tmp_path / "runs" / "run-log.jsonl")
    log.append_event(
        "quarantine", run_id="run-q", role="repository_discovery", id=HELD,
        signals=["instructions:download_not_run"], kept=True,
    )  # fmt: skip
    log.append_rejection(
        "run-q",
        Rejection(stage="source", role="repository_maintenance", code="x", index=0, id=HELD),
    )
    with SqliteStore(path) as store:
        store.hold(
            [QuarantineEntry(HELD, "run-q", "repository_discovery",
                             ("instructions:download_not_run",), _draft(), "")]
        )  # fmt: skip
        store.approve_held(HELD, run_id=REVIEW_RUN)
        ledger = lesson_ledger(HELD, store, load_sources([tmp_path / "runs"]))
    (revision,) = ledger.revisions
    assert (revision.path, revision.run_id) == ("review", "review")
    assert revision.held == ("instructions:download_not_run",)
    assert revision.held_in_run == "run-q"
    assert [(r.stage, r.code, r.run_id) for r in ledger.rejections] == [("source", "x", "run-q")]
    # An approval by a person is not a maintenance decision.
    assert ledger.decisions == ()


def test_exposure_files_count_deliveries_outside_runs(tmp_path: Path) -> None:
    path = tmp_path / "lessons.sqlite3"
    folder = tmp_path / "exposure"
    folder.mkdir(mode=0o700)
    for name, lines in (("a", [f"{HELD}@1", "torn-lin"]), ("b", [f"{HELD}@1", f"{HELD}@2"])):
        file = folder / f"{name}.keys"
        file.write_text("\n".join(lines) + "\n", "utf-8")
        os.chmod(file, 0o600)
    exposures = load_exposures(tmp_path)
    assert [e.keys for e in exposures] == [((HELD, 1),), ((HELD, 1), (HELD, 2))]
    with SqliteStore(path) as store:
        store.hold([QuarantineEntry(HELD, "run-q", "r", ("s:c",), _draft(), "")])
        store.approve_held(HELD)
        ledger = lesson_ledger(HELD, store, LedgerSources(exposures=exposures))
    assert (ledger.standalone.deliveries, ledger.standalone.conversations) == (3, 2)
    assert ledger.standalone.revisions == (1, 2)
    assert ledger.delivered == 0


def test_latched_outcomes_are_read_and_bad_files_are_named(tmp_path: Path) -> None:
    state = run_state_dir(tmp_path, "run-latched")
    latch_outcome(state, "run-latched", Outcome(status="failed", latched_ms=5))
    (tmp_path / "runs" / "broken").mkdir(parents=True)
    (tmp_path / "runs" / "broken" / "run.json").write_text("{not json", "utf-8")
    (tmp_path / "runs" / "x.report.json").write_text('{"run_id": 3}', "utf-8")
    sources = load_sources([tmp_path])
    assert sources.outcomes == {"run-latched": "failed"}
    skipped = "\n".join(sources.skipped)
    assert "broken/run.json" in skipped
    assert "x.report.json" in skipped
    assert sources.records == ()
