"""Each harness lane's CLI checks: a missing, too old or logged-out CLI is one sentence naming
the command that fixes it (HarnessUnavailable, whose cause the report keeps), and an effort
the CLI does not take is a ConfigError, both before any session starts (the missing CLI's
exit 2 is tests/cli/test_harness_lane_cli.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.harness_lanes import runner
from active_memory.agents.providers.registry import create_provider
from active_memory.errors import ConfigError, HarnessUnavailable
from active_memory.lanes import runner_lanes
from active_memory.models.runs import Binding
from agents.harness_lanes.lane_kit import env_for, request_for
from fake_claude import install_fake_claude, logged_out as claude_logged_out
from fake_codex import failed as codex_failed, install_fake_codex
from fake_copilot import failed as copilot_failed, install_fake_copilot
from fake_harness import FakeHarness
from fake_pi import install_fake_pi, no_api_key

pytestmark = pytest.mark.timeout(60)

Install = Callable[..., FakeHarness]


@dataclass(frozen=True)
class LaneCase:
    binding: Binding
    install: Install
    missing: str
    logged_out_reply: Mapping[str, Any]
    logged_out: str
    old_version: str
    too_old: str


CASES = {
    "claude-code": LaneCase(
        Binding(provider="anthropic", model="claude-sonnet-4-5", lane="claude-code"),
        install_fake_claude,
        "the claude-code lane runs specialists with Claude Code's `claude` command, which is "
        "not on PATH: install it with `npm install -g @anthropic-ai/claude-code` (or choose an "
        "API lane with --lane)",
        claude_logged_out(),
        "Claude Code is not logged in, so the claude-code lane cannot run: run "
        "`claude auth login` and try again",
        "1.0.128 (Claude Code)",
        "the claude-code lane needs Claude Code 2.1.0 or newer and `claude --version` says "
        "'1.0.128 (Claude Code)': update it with `claude update` (or `npm install -g "
        "@anthropic-ai/claude-code`)",
    ),
    "codex": LaneCase(
        Binding(provider="openai", model="gpt-5.1-codex", lane="codex"),
        install_fake_codex,
        "the codex lane runs specialists with Codex's `codex` command, which is not on PATH: "
        "install it with `npm install -g @openai/codex` (or choose an API lane with --lane)",
        codex_failed("unexpected status 401 Unauthorized: Missing bearer or basic authentication"),
        "Codex is not logged in, so the codex lane cannot run: run `codex login` and try again",
        "codex-cli 0.46.0",
        "the codex lane needs Codex 0.171.0 or newer and `codex --version` says "
        "'codex-cli 0.46.0': update it with `npm install -g @openai/codex`",
    ),
    "copilot": LaneCase(
        Binding(provider="openai", model="gpt-5.4", lane="copilot"),
        install_fake_copilot,
        "the copilot lane runs specialists with Copilot CLI's `copilot` command, which is not "
        "on PATH: install it with `npm install -g @github/copilot` (or choose an API lane with "
        "--lane)",
        copilot_failed("No authentication information found. Run `copilot login` to sign in."),
        "Copilot CLI is not logged in, so the copilot lane cannot run: run `copilot login` "
        "and try again",
        "GitHub Copilot CLI 0.0.339.",
        "the copilot lane needs Copilot CLI 1.0.102 or newer and `copilot --version` says "
        "'GitHub Copilot CLI 0.0.339.': update it with `copilot update` (or `npm install -g "
        "@github/copilot`)",
    ),
    "pi": LaneCase(
        Binding(provider="anthropic", model="claude-sonnet-4-5", lane="pi"),
        install_fake_pi,
        "the pi lane runs specialists with pi's `pi` command, which is not on PATH: install it "
        "with `npm install -g @mariozechner/pi-coding-agent` (or choose an API lane with --lane)",
        no_api_key(),
        "pi is not logged in, so the pi lane cannot run: start `pi` and log in with its /login "
        "command (or set the provider's API key) and try again",
        "0.9.2",
        "the pi lane needs pi 0.73.1 or newer and `pi --version` says '0.9.2': update it with "
        "`npm install -g @mariozechner/pi-coding-agent`",
    ),
}
LANES: Sequence[str] = sorted(CASES)


def test_every_lane_with_a_runner_is_checked_here() -> None:
    assert sorted(row.name for row in runner_lanes()) == LANES


@pytest.mark.parametrize("lane", LANES)
def test_a_missing_cli_names_the_install_command(tmp_path: Path, lane: str) -> None:
    with pytest.raises(HarnessUnavailable) as caught:
        create_provider(CASES[lane].binding, env={"PATH": str(tmp_path)})
    assert caught.value.cause == "harness_missing"
    assert str(caught.value) == CASES[lane].missing


@pytest.mark.parametrize("lane", LANES)
def test_a_too_old_cli_names_the_update_command(tmp_path: Path, lane: str) -> None:
    case = CASES[lane]
    fake = case.install(tmp_path / "bin", [], version=case.old_version)
    with pytest.raises(HarnessUnavailable) as caught:
        create_provider(case.binding, env=env_for(fake))
    assert caught.value.cause == "harness_too_old"
    assert str(caught.value) == case.too_old


@pytest.mark.parametrize("lane", LANES)
def test_a_logged_out_cli_is_one_sentence_naming_the_login_command(
    tmp_path: Path, folders: dict[str, Path], lane: str
) -> None:
    case = CASES[lane]
    fake = case.install(tmp_path / "bin", [case.logged_out_reply])
    provider = create_provider(case.binding, env=env_for(fake))
    with pytest.raises(HarnessUnavailable) as caught:
        asyncio.run(provider.complete(request_for(case.binding, folders)))
    assert caught.value.cause == "harness_logged_out"
    assert str(caught.value) == case.logged_out


@pytest.mark.parametrize("lane", LANES)
def test_an_effort_the_cli_does_not_take_is_refused_before_any_run(
    tmp_path: Path, lane: str
) -> None:
    case = CASES[lane]
    fake = case.install(tmp_path / "bin", [])
    with pytest.raises(ConfigError, match=r"'extreme' is not a .* effort; use one of"):
        create_provider(case.binding.model_copy(update={"effort": "extreme"}), env=env_for(fake))
    made = runner(lane)
    assert made is not None
    assert isinstance(create_provider(case.binding, env=env_for(fake)), made)
