"""What the integrations share: the recorder, its transcripts and record, in-process recall."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Literal

import pytest

from active_memory.errors import ConfigError
from active_memory.host import open_run
from active_memory.integrations._runs import RunRecorder, authored_graph, inherited_override
from active_memory.models.config import ActiveMemoryConfig, RuntimeConfig
from active_memory.models.runs import Binding
from active_memory.postmortem.binding import BindingOverride
from active_memory.recall.recall_session import Caller
from active_memory.recall.signals import ToolCall
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from integrations.kit import EDGES, ROLES, TARGET, make_checkout

BINDING = Binding(provider="anthropic", model="claude-sonnet-4-5")


def test_the_authored_graph_binds_agent_nodes_and_keeps_edges_in_its_hash() -> None:
    graph = authored_graph("flow", {**ROLES, "gate": "choice"}, BINDING, edges=EDGES)
    assert [(n.id, n.kind, n.binding) for n in graph.nodes] == [
        ("implement", "worker", BINDING),
        ("review", "verifier", BINDING),
        ("gate", "choice", None),
    ]
    assert graph.hash != authored_graph("flow", {**ROLES, "gate": "choice"}, BINDING).hash


def test_a_recorder_refuses_a_graph_the_run_was_not_opened_with(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path)
    graph = authored_graph("flow", ROLES, BINDING)
    other = authored_graph("other", ROLES, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store, open_run(
        RunIdentity("run-1", graph_hash=graph.hash), RuntimeConfig(), store, checkout,
        state_dir=tmp_path / "state",
    ) as run:  # fmt: skip
        with pytest.raises(ConfigError, match=r"graph_hash=graph\.hash"):
            RunRecorder(run, other)
        recorder = RunRecorder(run, graph)
        with pytest.raises(ConfigError, match="'deploy' is not a node"):
            recorder.start("deploy")


def test_executions_count_occurrences_per_node_and_write_private_transcripts(
    tmp_path: Path,
) -> None:
    checkout = make_checkout(tmp_path)
    graph = authored_graph("flow", ROLES, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store, open_run(
        RunIdentity("run-1", graph_hash=graph.hash), RuntimeConfig(), store, checkout,
        state_dir=tmp_path / "state",
    ) as run:  # fmt: skip
        recorder = RunRecorder(run, graph, runtime={"source": "test"})
        first = recorder.start("implement", conversation_id="c1")
        first.say("assistant", '{"path": "a"}', tool="read_file")
        first.say("tool", "contents", tool="read_file")
        first.finish("completed", "Done.")
        again = recorder.start("implement", attempt=2, occurrence=1)
        review = recorder.start("review")
        with pytest.raises(ConfigError, match="already started"):
            recorder.start("review", execution_id=review.id)
        record = recorder.record()
    assert [(e.id, e.occurrence, e.attempt, e.status) for e in record.executions] == [
        ("implement-1-1", 1, 1, "completed"),
        ("implement-1-2", 1, 2, "cancelled"),  # never settled by the framework
        ("review-1-1", 1, 1, "cancelled"),
    ]
    assert again.transcript.exists() is False
    assert record.executions[1].transcript is None
    assert record.runtime == {"source": "test"}
    transcript = record.executions[0].transcript
    assert transcript is not None
    assert stat.S_IMODE(transcript.stat().st_mode) == 0o600
    lines = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()]
    assert [(line["role"], line.get("tool"), line["text"]) for line in lines] == [
        ("assistant", "read_file", '{"path": "a"}'),
        ("tool", "read_file", "contents"),
    ]
    assert record.executions[0].completion == "Done."


def test_in_process_recall_records_nothing_when_active_memory_is_disabled(
    tmp_path: Path,
) -> None:
    checkout = make_checkout(tmp_path)
    config = RuntimeConfig(active_memory=ActiveMemoryConfig(repository=False, graph=False))
    with SqliteStore(tmp_path / "lessons.sqlite3") as store, open_run(
        RunIdentity("run-1"), config, store, checkout, state_dir=tmp_path / "state"
    ) as run:  # fmt: skip
        call = ToolCall("Read", {"file_path": TARGET}, str(checkout))
        assert run.recall_tool(call, Caller("implement", "c1")) is None
        assert run.receipts == ()
    with SqliteStore(tmp_path / "lessons.sqlite3") as store, open_run(
        RunIdentity("run-2"), RuntimeConfig(), store, checkout, state_dir=tmp_path / "state2"
    ) as run:  # fmt: skip
        recall = run.recall_tool(call, Caller("implement", "c1"))
        assert recall is not None
        recall.release()
        assert [(r.tool, r.paths) for r in run.receipts] == [("Read", (TARGET,))]


def test_the_postmortem_inherits_the_model_the_source_session_ran(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path)
    graph = authored_graph("flow", ROLES, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store, open_run(
        RunIdentity("run-1", graph_hash=graph.hash), RuntimeConfig(), store, checkout,
        state_dir=tmp_path / "state",
    ) as run:  # fmt: skip
        recorder = RunRecorder(run, graph)
        assert inherited_override(recorder, {}, None) is None
        assert inherited_override(recorder, {"implement": "claude-sonnet-4-5"}, None) is None
        ran = inherited_override(recorder, {"implement": "claude-opus-4-1", "review": "x"}, None)
        assert ran == BindingOverride(model="claude-opus-4-1")
        chosen = BindingOverride(model="claude-haiku-4-5")
        assert inherited_override(recorder, {"implement": "claude-opus-4-1"}, chosen) is chosen


@pytest.mark.parametrize(("outcome", "ended"), [("failed", "error"), ("succeeded", "cancelled"),
                                                ("cancelled", "cancelled")])  # fmt: skip
def test_executions_nobody_ended_end_with_the_run(
    tmp_path: Path, outcome: Literal["failed", "succeeded", "cancelled"], ended: str
) -> None:
    checkout = make_checkout(tmp_path)
    graph = authored_graph("flow", ROLES, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store, open_run(
        RunIdentity("run-1", graph_hash=graph.hash), RuntimeConfig(), store, checkout,
        state_dir=tmp_path / "state",
    ) as run:  # fmt: skip
        recorder = RunRecorder(run, graph)
        recorder.start("implement").finish("completed")
        recorder.start("review")  # a stream its host stopped reading
        recorder.end_open(outcome)
        assert [e.status for e in recorder.record().executions] == ["completed", ended]
