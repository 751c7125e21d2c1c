"""The ledger of three recorded runs: its counts match the records' deliveries, receipts and
outcomes, and the maintenance decisions the postmortems published, deferred or kept (the
reports' keep_ids)."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.ledger import LessonLedger, ledgers, lesson_ledger, load_sources
from active_memory.models.runs import RunRecord
from cli.authoring_kit import isolated_build
from ledger.ledger_kit import G1, R1, R2, three_runs
from postmortem.postmortem_kit import store_at

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunRecord]]:
    tmp_path = tmp_path_factory.mktemp("ledger")
    with isolated_build(tmp_path_factory.mktemp("isolated")):
        return tmp_path, three_runs(tmp_path)


def _all(tmp_path: Path) -> dict[str, LessonLedger]:
    sources = load_sources([tmp_path])
    assert sources.skipped == ()
    with store_at(tmp_path) as store:
        found = ledgers(store, sources, retired=[t.id for t in store.list_retired()])
    return {ledger.id: ledger for ledger in found}


def _expected_tool_calls(records: list[RunRecord], lesson_id: str) -> int:
    count = 0
    for record in records:
        starts = {d.execution: d.time_ms for d in record.deliveries if d.lesson_id == lesson_id}
        for receipt in record.receipts:
            start = starts.get(receipt.execution)
            if receipt.execution in starts and start is not None and receipt.time_ms >= start:
                count += 1
    return count


def test_reach_and_outcomes_match_the_three_records(
    recorded: tuple[Path, list[RunRecord]],
) -> None:
    tmp_path, records = recorded
    found = _all(tmp_path)
    assert set(found) == {G1, R1, R2}
    for lesson_id, ledger in found.items():
        mine = [(r, d) for r in records for d in r.deliveries if d.lesson_id == lesson_id]
        assert ledger.delivered == len(mine)
        assert ledger.conversations == len({(r.run_id, d.conversation_id) for r, d in mine})
        assert [run.run_id for run in ledger.runs] == list(dict.fromkeys(r.run_id for r, _ in mine))
        outcomes: dict[str, int] = {}
        for record in {r.run_id: r for r, _ in mine}.values():
            assert record.outcome is not None
            outcomes[record.outcome.status] = outcomes.get(record.outcome.status, 0) + 1
        assert ledger.outcomes == outcomes
        assert sum(r.tool_calls_after for r in ledger.runs) == _expected_tool_calls(
            records, lesson_id
        )
    assert found[G1].delivered == 2
    assert found[G1].conversations == 2
    assert found[R2].outcomes == {"failed": 1, "succeeded": 1}
    assert found[G1].runs[0].tool_calls_after > 0


def test_decisions_name_their_runs(recorded: tuple[Path, list[RunRecord]]) -> None:
    tmp_path, (a, b, c) = recorded
    found = _all(tmp_path)
    # Keeps publish nothing: each report's keep_ids is their record, exact, delivered or not.
    assert [(d.run_id, d.action, d.source) for d in found[G1].decisions] == [
        (a.run_id, "keep", "report")
    ]
    r1 = found[R1]
    assert not r1.live
    assert [(d.run_id, d.action, d.source, d.revision) for d in r1.decisions] == [
        (a.run_id, "keep", "report", None),
        (b.run_id, "retire", "history", 2),
    ]
    assert r1.decisions[1].role == "repository_maintenance"
    r2 = found[R2]
    # Retiring a lesson of unknown provenance is deferred; the first and third runs keep it.
    assert [(d.run_id, d.action, d.detail) for d in r2.decisions] == [
        (a.run_id, "keep", None),
        (b.run_id, "defer", "retire"),
        (c.run_id, "keep", None),
    ]
    assert r2.live
    assert r2.revision == 1
    assert r2.decision_counts == {"keep": 2, "adapt": 0, "retire": 0, "defer": 1}


def test_admission_history_lists_every_revision(recorded: tuple[Path, list[RunRecord]]) -> None:
    tmp_path, (_, b, _) = recorded
    r1 = _all(tmp_path)[R1]
    assert [(r.revision, r.op, r.path, r.run_id) for r in r1.revisions] == [
        (1, "upsert", "run", "seed"),
        (2, "retire", "run", b.run_id),
    ]
    assert r1.revisions[0].title == "Conftest clears only APP_ variables"


def test_one_ledger_and_an_unknown_id(recorded: tuple[Path, list[RunRecord]]) -> None:
    from active_memory.errors import LessonNotFound

    tmp_path, _ = recorded
    sources = load_sources([tmp_path])
    with store_at(tmp_path) as store:
        one = lesson_ledger(R2, store, sources)
        assert one.delivered == 3
        with pytest.raises(LessonNotFound):
            lesson_ledger("lesson-01JWAZ00000000000000000009", store, sources)


def test_without_sources_only_the_store_speaks(recorded: tuple[Path, list[RunRecord]]) -> None:
    tmp_path, _ = recorded
    with store_at(tmp_path) as store:
        bare = lesson_ledger(R2, store, load_sources([]))
    assert bare.delivered == 0
    assert bare.runs == ()
    assert bare.decisions == ()
    assert [r.revision for r in bare.revisions] == [1]


def _recall_text(tmp_path: Path, checkout: Path) -> str:
    from active_memory.models.config import ActiveMemoryConfig
    from active_memory.recall.index import RecallIndex
    from active_memory.recall.recall_session import Caller, RecallSession
    from active_memory.recall.signals import ToolCall, WorkspaceRoot
    from active_memory.store.backend import RunIdentity, SnapshotRequest

    repository = "forge:github.com/example/order-service"
    with store_at(tmp_path) as store:
        snapshot = store.snapshot(
            SnapshotRequest(RunIdentity("ledger-recall", repository=repository), graph=False)
        )
    session = RecallSession(
        RecallIndex(snapshot.lessons, repository=repository),
        WorkspaceRoot.at(checkout),
        ActiveMemoryConfig(),
    )
    call = ToolCall("Read", {"file_path": "tests/conftest.py"}, str(checkout))
    result = session.recall(call, Caller("implement", "ledger-conversation"))
    result.release()
    return result.text


def test_recall_is_the_same_with_and_without_ledger_data(
    recorded: tuple[Path, list[RunRecord]], tmp_path: Path
) -> None:
    """Counters inform people; relevance alone ranks. The same store recalls the same cards in
    the same order whether or not runs, logs and reports that favour one lesson exist."""
    import shutil

    source, _ = recorded
    bare = tmp_path / "bare"
    (bare / "state").mkdir(parents=True)
    shutil.copy(source / "state" / "lessons.sqlite3", bare / "state" / "lessons.sqlite3")
    checkout = source / "first" / "checkout"
    without = _recall_text(bare, checkout)
    assert load_sources([bare]).records == ()
    with_data = _recall_text(source, checkout)
    assert _all(source)[R2].delivered == 3
    assert with_data == without
    assert R2 in with_data
