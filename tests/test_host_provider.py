"""The report and the run log name the provider that served the sessions, not the binding's."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.agents.providers.base import ModelProvider, ModelRequest, ModelResponse
from active_memory.host import open_run
from active_memory.models.config import RuntimeConfig
from active_memory.models.runs import Outcome
from active_memory.postmortem.binding import BindingOverride, provider_label
from active_memory.runlog import read_events
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import RecordingProvider, ReplayProvider, ScriptedProvider
from postmortem.postmortem_kit import by_labels, first_run, no_lessons

OUTCOME = Outcome(status="succeeded", latched_ms=1748772087000, summary="approved")


class Gateway:
    """A host's own provider, named."""

    name = "acme-gateway"

    def __init__(self) -> None:
        self._inner = ScriptedProvider(by_labels(no_lessons()))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self._inner.complete(request)


class Nameless(Gateway):
    name = "not a\nname"  # not one a report may carry: the class name is used instead


def _scripted() -> ScriptedProvider:
    return ScriptedProvider(by_labels(no_lessons()))


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_scripted, "scripted"),
        (Gateway, "acme-gateway"),
        (Nameless, "Nameless"),
        ("recording", "scripted"),
        ("replay", "replay"),
    ],
)
async def test_the_report_and_run_log_name_the_provider_passed_in(
    tmp_path: Path, make: object, expected: str
) -> None:
    folder, record = first_run(tmp_path)
    provider: ModelProvider
    if make == "recording":
        provider = RecordingProvider(_scripted(), tmp_path / "recorded.jsonl")
    elif make == "replay":
        provider = ReplayProvider(folder / "exchanges.jsonl")
    else:
        assert callable(make)
        provider = make()
    identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
    with (
        SqliteStore(tmp_path / "lessons.sqlite3") as store,
        open_run(
            identity, RuntimeConfig(), store, folder / "checkout", state_dir=tmp_path / "state"
        ) as run,
    ):
        run.latch_outcome(OUTCOME)
        report = await run.postmortem(record, provider=provider, dry_run=make == "replay")
    assert report.status in ("completed", "dry_run"), report.reason
    inherited = record.graph.nodes[0].binding
    assert inherited is not None
    assert inherited.provider == "anthropic"
    assert (report.provider, report.model) == (expected, inherited.model)
    logged = read_events(tmp_path / "state" / "run-log.jsonl")[-1]
    assert (logged["event"], logged["provider"], logged["model"]) == (
        "postmortem",
        expected,
        inherited.model,
    )
    assert "anthropic" not in str(logged)


async def test_a_provider_named_by_the_override_is_the_name_kept(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
    with (
        SqliteStore(tmp_path / "lessons.sqlite3") as store,
        open_run(
            identity, RuntimeConfig(), store, folder / "checkout", state_dir=tmp_path / "state"
        ) as run,
    ):
        run.latch_outcome(OUTCOME)
        override = BindingOverride(provider="openai", model="gpt-5")
        report = await run.postmortem(record, provider=_scripted(), override=override)
    assert (report.provider, report.model) == ("openai", "gpt-5")


def test_provider_labels() -> None:
    assert provider_label(_scripted()) == ("scripted", None)
    wrapped = RecordingProvider(RecordingProvider(Gateway(), "a.jsonl"), "b.jsonl")
    assert provider_label(wrapped) == ("acme-gateway", None)
    assert provider_label(Nameless()) == ("Nameless", None)


def test_an_sdk_adapter_passed_in_names_its_provider_and_lane() -> None:
    from active_memory.agents.providers.openai import OpenAIProvider
    from active_memory.models.runs import Binding, GraphNode
    from active_memory.postmortem.binding import specialist_binding

    adapter = OpenAIProvider(env={"OPENAI_API_KEY": "sk-test-not-a-key"})
    assert provider_label(adapter) == ("openai", "openai")
    inherited = Binding(provider="anthropic", model="claude-sonnet-4-5", lane="claude-code")
    node = GraphNode(id="implement", kind="worker", binding=inherited)
    binding = specialist_binding(node, BindingOverride(), adapter)
    assert (binding.provider, binding.lane, binding.model) == ("openai", "openai", inherited.model)
