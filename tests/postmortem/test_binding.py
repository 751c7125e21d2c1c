"""The binding the specialists run with: the source node's, as a host or the CLI overrides it.

The policy lives in the library, so these tests call it the way a host does; the CLI tests only
check that ``--provider``/``--model`` reach it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from active_memory.errors import ConfigError
from active_memory.models.runs import Binding, GraphNode
from active_memory.postmortem.binding import (
    REPLAY,
    BindingOverride,
    provider_for,
    specialist_binding,
)
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.testing import ReplayProvider, ScriptedProvider
from postmortem.postmortem_kit import by_labels, config_of, first_run, no_lessons, store_at

INHERITED = Binding(
    provider="anthropic",
    model="claude-sonnet-4-5",
    effort="medium",
    lane="bedrock",
    connections=("team-proxy",),
)


def test_the_empty_override_keeps_the_inherited_binding() -> None:
    assert BindingOverride().apply(INHERITED) == INHERITED


def test_replay_keeps_model_effort_lane_and_connections() -> None:
    replayed = BindingOverride(provider=REPLAY).apply(INHERITED)
    assert replayed == Binding(
        provider="replay",
        model="claude-sonnet-4-5",
        effort="medium",
        lane="bedrock",
        connections=("team-proxy",),
    )


def test_another_provider_starts_on_its_own_default_lane() -> None:
    moved = BindingOverride(provider="openai", model="gpt-5").apply(INHERITED)
    assert (moved.provider, moved.model, moved.lane) == ("openai", "gpt-5", None)
    assert (moved.effort, moved.connections) == ("medium", ("team-proxy",))


def test_naming_the_inherited_provider_keeps_its_lane() -> None:
    same = BindingOverride(provider="anthropic", model="claude-opus-4").apply(INHERITED)
    assert (same.lane, same.model) == ("bedrock", "claude-opus-4")


def test_an_unknown_provider_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'mistral'; known: replay, anthropic"):
        BindingOverride(provider="mistral").apply(INHERITED)


def test_a_replay_provider_counts_as_replay_unless_another_provider_is_named(
    tmp_path: Path,
) -> None:
    recording = tmp_path / "exchanges.jsonl"
    recording.write_text("")
    node = GraphNode(id="implement", kind="worker", binding=INHERITED)
    replay = ReplayProvider(recording)
    assert specialist_binding(node, BindingOverride(), replay).provider == "replay"
    named = specialist_binding(node, BindingOverride(provider="openai"), replay)
    assert named.provider == "openai"
    scripted = specialist_binding(node, BindingOverride(), ScriptedProvider([]))
    assert scripted == INHERITED.model_copy(update={"provider": "scripted"})


def test_a_replay_binding_needs_a_recording(tmp_path: Path) -> None:
    replayed = BindingOverride(provider=REPLAY).apply(INHERITED)
    with pytest.raises(ConfigError, match="replay answers from a recording"):
        provider_for(replayed)
    recording = tmp_path / "exchanges.jsonl"
    recording.write_text("")
    assert isinstance(provider_for(replayed, recording), ReplayProvider)


async def test_a_host_override_reaches_the_factory_and_the_report(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    seen: list[Binding] = []
    provider = ScriptedProvider(by_labels(no_lessons()))

    def factory(binding: Binding) -> ScriptedProvider:
        seen.append(binding)
        return provider

    with store_at(tmp_path) as store:
        options = PostmortemOptions(
            config=config_of(),
            backend=store,
            private_dir=tmp_path / "evidence",
            provider_factory=factory,
            override=BindingOverride(provider="openai", model="gpt-5"),
            new_id=sequential_ids(),
        )
        report = await run_postmortem(record, options)
    assert report.status == "completed"
    assert [(b.provider, b.model, b.lane, b.effort) for b in seen] == [
        ("openai", "gpt-5", None, "medium")
    ]
    assert (report.provider, report.model) == ("openai", "gpt-5")
    assert {request.model for request in provider.requests} == {"gpt-5"}


async def test_a_host_replaying_a_recording_reports_replay_as_the_cli_does(
    tmp_path: Path,
) -> None:
    folder, record = first_run(tmp_path)
    with store_at(tmp_path) as store:
        options = PostmortemOptions(
            config=config_of(),
            backend=store,
            private_dir=tmp_path / "evidence",
            provider=ReplayProvider(folder / "exchanges.jsonl"),
            new_id=sequential_ids(),
            dry_run=True,
        )
        report = await run_postmortem(record, options)
    assert report.status == "dry_run"
    assert (report.source_node, report.provider, report.model) == (
        "implement",
        "replay",
        "claude-sonnet-4-5",
    )


async def test_an_unknown_override_provider_raises_before_any_work(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider([])
    with store_at(tmp_path) as store:
        options = PostmortemOptions(
            config=config_of(),
            backend=store,
            private_dir=tmp_path / "evidence",
            provider=provider,
            override=BindingOverride(provider="mistral"),
        )
        with pytest.raises(ConfigError, match="unknown provider 'mistral'"):
            await run_postmortem(record, options)
    assert provider.requests == []
    assert not (tmp_path / "evidence").exists()


def test_options_are_frozen_and_take_a_plain_path(tmp_path: Path) -> None:
    with store_at(tmp_path) as store:
        options = PostmortemOptions(
            config=config_of(),
            backend=store,
            private_dir=str(tmp_path / "evidence"),  # type: ignore[arg-type]
            frozen_lessons=[],  # type: ignore[arg-type]
        )
    assert options.private_dir == tmp_path / "evidence"
    assert options.frozen_lessons == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.dry_run = True  # type: ignore[misc]


@pytest.mark.parametrize(
    ("override", "described"),
    [
        (BindingOverride(lane="compatible", base_url="http://127.0.0.1:8080/v1"),
         "--base-url 127.0.0.1:8080"),
        (BindingOverride(lane="compatible"), "--lane compatible"),
        (BindingOverride(api_key_env="CORP_KEY"), "--api-key-env CORP_KEY"),
    ],
)  # fmt: skip
def test_the_callers_connection_is_named_by_what_the_caller_gave(
    override: BindingOverride, described: str
) -> None:
    connection = override.connection()
    assert connection is not None
    assert connection.described == described
