"""End to end on the recorded fixture runs with the replay provider: discover, then maintain."""

from __future__ import annotations

from pathlib import Path

import pytest
from inline_snapshot import snapshot

from active_memory.errors import LessonRetired
from active_memory.models.config import parse_runtime_config
from active_memory.models.lessons import GraphScope, RepositoryScope
from active_memory.models.runs import RunRecord
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.runlog import RunLog, read_events
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ReplayProvider
from postmortem.postmortem_kit import G1, R1, R2, commit_of, first_run, second_run

pytestmark = pytest.mark.timeout(30)


async def _replay(
    record: RunRecord,
    folder: Path,
    store: SqliteStore,
    tmp_path: Path,
    new_id: object,
    **kw: object,
) -> PostmortemReport:
    provider = ReplayProvider(folder / "exchanges.jsonl")
    options = PostmortemOptions(
        config=parse_runtime_config(record.runtime),
        backend=store,
        private_dir=tmp_path / f"evidence-{record.run_id}",
        provider=provider,
        new_id=new_id,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )
    report = await run_postmortem(record, options)
    if not kw.get("dry_run"):
        provider.assert_consumed()
    return report


def _projection(report: PostmortemReport) -> dict[str, object]:
    """What each specialist did, without the figures that vary (tokens, time)."""
    return {
        s.specialist: {
            "status": s.status,
            "batches": s.batches,
            "decisions": dict(s.decisions),
            "accepted": s.proposals_accepted,
            "rejected": dict(s.rejections),
            "mutations": s.mutations,
        }
        for s in report.specialists
    }


async def test_first_postmortem_publishes_lessons_with_evidence_and_rejects_bad_items(
    tmp_path: Path,
) -> None:
    folder, record = first_run(tmp_path)
    log = RunLog(tmp_path / "run-log.jsonl")
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        report = await _replay(record, folder, store, tmp_path, sequential_ids(), run_log=log)
        lessons = {lesson.id: lesson for lesson in store.list_lessons()}

    assert report.status == "completed"
    assert (report.generation_before, report.generation_after) == (0, 1)
    assert [c.id for c in report.changes] == [G1, R1, R2]
    assert {c.op for c in report.changes} == {"create"}
    assert set(lessons) == {G1, R1, R2}
    # Every bad item of the recorded answers was refused, counted by its stage.
    assert dict(report.rejections) == {
        "card": 1, "injection": 1, "references": 1, "secret": 1, "source": 1
    }  # fmt: skip
    discovery = report.specialist("repository_discovery")
    assert (discovery.status, discovery.proposals_accepted, discovery.rejected) == (
        "published",
        2,
        3,
    )
    assert report.specialist("graph_maintenance").status == "nothing_to_do"
    assert discovery.input_tokens > 0
    assert discovery.batches == 1

    conftest_card = lessons[R1]
    assert isinstance(conftest_card.scope, RepositoryScope)
    assert conftest_card.scope.files == ("src/app/config.py", "tests/conftest.py")
    assert conftest_card.scope.keyword_groups == (("feature", "flags"),)
    assert conftest_card.evidence.run_id == record.run_id
    assert conftest_card.evidence.source_commit == commit_of(record)
    assert "repository:tests/conftest.py" in conftest_card.evidence.references
    worker_card = lessons[G1]
    assert isinstance(worker_card.scope, GraphScope)
    assert (worker_card.scope.node_id, worker_card.scope.repository) == ("implement", None)
    assert worker_card.evidence.source_commit is None  # not repository-bound
    # The docs-table finding is a repository lesson only: no graph card repeats it.
    assert all("docs/configuration.md" not in lesson.title for lesson in lessons.values()
               if isinstance(lesson.scope, GraphScope))  # fmt: skip

    events = read_events(tmp_path / "run-log.jsonl")
    rejections = [e for e in events if e["event"] == "rejection"]
    assert sorted(str(e["stage"]) for e in rejections) == [
        "card", "injection", "references", "secret", "source"
    ]  # fmt: skip
    text = (tmp_path / "run-log.jsonl").read_text("utf-8")
    assert "example-only-pw" not in text
    assert "Ignore previous" not in text
    assert "Check the process environment" not in text  # never lesson text, even accepted
    summary = [e for e in events if e["event"] == "postmortem"]
    assert summary[-1]["status"] == "completed"
    assert summary[-1]["published"] == 3


async def test_second_postmortem_on_a_later_run_adapts_and_retires(tmp_path: Path) -> None:
    first, first_record = first_run(tmp_path)
    second, second_record = second_run(tmp_path, first)
    new_id = sequential_ids()
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        await _replay(first_record, first, store, tmp_path, new_id)
        report = await _replay(second_record, second, store, tmp_path, new_id)
        live = {lesson.id: lesson for lesson in store.list_lessons()}
        with pytest.raises(LessonRetired):
            store.get(R2)

    # Graph lessons belong to the first run's graph version: out of this run's scope. The clean
    # run shows nothing worth a new lesson.
    assert _projection(report) == snapshot(
        {
            "graph_maintenance": {
                "status": "nothing_to_do",
                "batches": 0,
                "decisions": {},
                "accepted": 0,
                "rejected": {},
                "mutations": 0,
            },
            "repository_maintenance": {
                "status": "published",
                "batches": 1,
                "decisions": {"adapt": 1, "retire": 1},
                "accepted": 0,
                "rejected": {},
                "mutations": 2,
            },
            "graph_discovery": {
                "status": "nothing_to_do",
                "batches": 1,
                "decisions": {},
                "accepted": 0,
                "rejected": {},
                "mutations": 0,
            },
            "repository_discovery": {
                "status": "nothing_to_do",
                "batches": 1,
                "decisions": {},
                "accepted": 0,
                "rejected": {},
                "mutations": 0,
            },
        }
    )
    assert [(c.op, c.id, c.expected_revision, c.revision) for c in report.changes] == [
        ("adapt", R1, 1, 2), ("retire", R2, 1, 2)
    ]  # fmt: skip
    assert set(live) == {G1, R1}
    adapted = live[R1]
    assert adapted.revision == 2
    assert "APP_REQUEST_TIMEOUT" in adapted.recommendation
    assert adapted.evidence.run_id == second_record.run_id
    assert adapted.evidence.source_commit == commit_of(second_record)
    assert "feature_flags" not in adapted.scope.identifiers  # gone from src/app/config.py
    assert (report.generation_before, report.generation_after) == (1, 2)


async def test_dry_run_reports_what_would_publish_and_writes_nothing(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        report = await _replay(record, folder, store, tmp_path, sequential_ids(), dry_run=True)
        assert store.list_lessons() == ()
        assert store.generation() == 0

    assert report.status == "dry_run"
    assert report.ok
    assert [c.id for c in report.changes] == [G1, R1, R2]
    assert all(c.revision is None for c in report.changes)
    assert report.specialist("repository_discovery").status == "dry_run"
    assert report.published == ()
