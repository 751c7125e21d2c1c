"""The in-process host API: latch the outcome, then run the postmortem from the ActiveRun."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.errors import PostmortemError
from active_memory.host import open_run
from active_memory.models.changes import Mutation, Publication
from active_memory.models.config import RuntimeConfig
from active_memory.models.runs import Outcome
from active_memory.postmortem.binding import BindingOverride
from active_memory.recall.recall_session import Caller
from active_memory.recall.signals import ToolCall
from active_memory.runlog import read_events
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider, answer_response
from postmortem.postmortem_kit import by_labels, decisions, first_run, graph_draft, no_lessons

OUTCOME = Outcome(status="succeeded", latched_ms=1748772087000, summary="approved")
LESSON = "lesson-01JWNF15X00000000000000009"


async def test_postmortem_needs_a_latched_outcome(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
        with open_run(identity, RuntimeConfig(), store, folder / "checkout",
                      state_dir=tmp_path / "state") as run:  # fmt: skip
            provider = ScriptedProvider([])
            with pytest.raises(PostmortemError, match="latch_outcome"):
                await run.postmortem(record, provider=provider)
            assert provider.requests == []


async def test_postmortem_takes_manifest_receipts_and_outcome_from_the_run(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    checkout = folder / "checkout"
    state = tmp_path / "state"
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        store.publish(
            Publication(
                run_id="seed",
                mutations=(
                    Mutation(
                        op="upsert", id=LESSON, expected_revision=0, draft=graph_draft(record)
                    ),
                ),
            )
        )
        identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
        with open_run(identity, RuntimeConfig(), store, checkout, state_dir=state) as run:
            guidance = run.graph_guidance(
                "implement", "conv-impl-1a1", execution_id="ex-implement-1a1"
            )
            assert LESSON in guidance
            call = ToolCall("Read", {"file_path": "tests/conftest.py"}, str(checkout))
            run.session.recall(
                call, Caller("implement", "conv-impl-1a1", "ex-implement-1a1")
            ).release()
            run.latch_outcome(OUTCOME)
            provider = ScriptedProvider(
                by_labels(
                    {**no_lessons(), ("graph_maintenance", 0, 1): decisions((LESSON, "keep"))}
                )
            )
            bare = record.model_copy(update={"outcome": None, "deliveries": (), "receipts": ()})
            report = await run.postmortem(bare, provider=provider)
        assert report.status == "completed"
        assert report.specialist("graph_maintenance").decisions == {"keep": 1}
        maintenance = next(
            r for r in provider.requests if r.labels.specialist == "graph_maintenance"
        )
        evidence = str(maintenance.messages[0])
        assert f'"lesson":"{LESSON}@1"' in evidence  # the run's own delivery manifest
        discovery = next(
            r for r in provider.requests if r.labels.specialist == "repository_discovery"
        )
        assert '"paths":["tests/conftest.py"]' in str(discovery.messages[0])  # the run's receipt
    assert run.outcome == OUTCOME
    events = read_events(state / "run-log.jsonl")
    assert events[-1]["event"] == "postmortem"
    assert events[-1]["outcome"] == "succeeded"
    assert (state / "evidence" / "graph_maintenance" / "graph.json").exists()


async def test_a_failing_postmortem_leaves_the_latched_outcome_as_it_was(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
        with open_run(identity, RuntimeConfig(), store, folder / "checkout",
                      state_dir=tmp_path / "state") as run:  # fmt: skip
            latched = run.latch_outcome(OUTCOME).read_bytes()
            provider = ScriptedProvider(
                by_labels({("graph_discovery", 0, 1): RuntimeError("boom"),
                           ("repository_discovery", 0, 1): answer_response({"lessons": []})})
            )  # fmt: skip
            report = await run.postmortem(record, provider=provider)
    assert report.specialist("graph_discovery").error_code == "internal_error"
    assert (tmp_path / "state" / "outcome.json").read_bytes() == latched


async def test_a_host_overrides_the_binding_as_the_cli_does(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
        with open_run(identity, RuntimeConfig(), store, folder / "checkout",
                      state_dir=tmp_path / "state") as run:  # fmt: skip
            run.latch_outcome(OUTCOME)
            provider = ScriptedProvider(by_labels(no_lessons()))
            override = BindingOverride(model="claude-opus-4")
            report = await run.postmortem(record, provider=provider, override=override)
    assert report.status == "completed"
    # The scripted provider served every session: the report names it, with the model asked.
    assert (report.provider, report.model) == ("scripted", "claude-opus-4")
    assert {request.model for request in provider.requests} == {"claude-opus-4"}
    assert read_events(tmp_path / "state" / "run-log.jsonl")[-1]["model"] == "claude-opus-4"
