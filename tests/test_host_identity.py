"""One identity: a record handed to ``run.postmortem`` is this run's, or it is refused first."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.errors import PostmortemError
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import RuntimeConfig
from active_memory.models.runs import Checkout, Outcome, RunRecord
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider
from postmortem.postmortem_kit import REPOSITORY, by_labels, first_run, no_lessons

OUTCOME = Outcome(status="succeeded", latched_ms=1748772087000, summary="approved")


def _run(store: SqliteStore, record: RunRecord, checkout: Path, tmp_path: Path) -> ActiveRun:
    identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
    run = open_run(identity, RuntimeConfig(), store, checkout, state_dir=tmp_path / "state")
    run.latch_outcome(OUTCOME)
    return run


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"run_id": "run-somebody-else"}, r"run_id 'run-somebody-else' is not this run's"),
        ({"checkout": "other"}, r"checkout.repository 'forge:github.com/acme/other' is not the"),
        ({"graph": "renamed"}, r"but this run was opened with graph_hash"),
    ],
)
async def test_a_record_of_another_identity_is_refused_before_any_work(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    folder, record = first_run(tmp_path)
    checkout = folder / "checkout"
    update: dict[str, object] = {}
    if "run_id" in change:
        update["run_id"] = change["run_id"]
    if "checkout" in change:
        update["checkout"] = Checkout(path=checkout, repository="forge:github.com/acme/other")
    if "graph" in change:
        update["graph"] = record.graph.model_copy(update={"raw": {**record.graph.raw, "v": 2}})  # type: ignore[dict-item]
    wrong = record.model_copy(update=update)
    with (
        SqliteStore(tmp_path / "lessons.sqlite3") as store,
        _run(store, record, checkout, tmp_path) as run,
    ):
        provider = ScriptedProvider([])
        with pytest.raises(PostmortemError, match=message):
            await run.postmortem(wrong, provider=provider)
        assert provider.requests == []
        assert store.generation() == 0
    assert not (tmp_path / "state" / "run-log.jsonl").exists()
    assert not (tmp_path / "state" / "evidence").exists()


async def test_a_record_without_a_checkout_gets_the_runs_own(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    checkout = folder / "checkout"
    bare = record.model_copy(update={"checkout": None})
    with (
        SqliteStore(tmp_path / "lessons.sqlite3") as store,
        _run(store, record, checkout, tmp_path) as run,
    ):
        provider = ScriptedProvider(by_labels(no_lessons()))
        report = await run.postmortem(bare, provider=provider)
    assert run.identity.repository == REPOSITORY
    assert report.status == "completed"
    assert report.checkout is not None
    first = str(provider.requests[0].messages[0])
    assert f"repository key: {REPOSITORY}" in first
    assert "none could be inspected" not in first


async def test_the_runs_own_identity_passes_unchanged(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    assert record.checkout is not None
    assert record.checkout.repository == REPOSITORY
    with (
        SqliteStore(tmp_path / "lessons.sqlite3") as store,
        _run(store, record, folder / "checkout", tmp_path) as run,
    ):
        report = await run.postmortem(record, provider=ScriptedProvider(by_labels(no_lessons())))
    assert (report.run_id, report.status) == (record.run_id, "completed")
