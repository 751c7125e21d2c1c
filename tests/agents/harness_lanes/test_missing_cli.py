"""A harness lane whose CLI is not on PATH is one sentence naming the command that installs it,
raised before any session starts (the CLI's exit 2 is tests/cli/test_harness_lane_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.agents.providers.registry import create_provider
from active_memory.errors import HarnessUnavailable
from active_memory.models.runs import Binding

MISSING = {
    "claude-code": (
        Binding(provider="anthropic", model="claude-sonnet-4-5", lane="claude-code"),
        "the claude-code lane runs specialists with Claude Code's `claude` command, which is "
        "not on PATH: install it with `npm install -g @anthropic-ai/claude-code` (or choose an "
        "API lane with --lane)",
    ),
    "codex": (
        Binding(provider="openai", model="gpt-5.1-codex", lane="codex"),
        "the codex lane runs specialists with Codex's `codex` command, which is not on PATH: "
        "install it with `npm install -g @openai/codex` (or choose an API lane with --lane)",
    ),
}


@pytest.mark.parametrize("lane", sorted(MISSING))
def test_a_missing_cli_names_the_install_command(tmp_path: Path, lane: str) -> None:
    binding, sentence = MISSING[lane]
    with pytest.raises(HarnessUnavailable) as caught:
        create_provider(binding, env={"PATH": str(tmp_path)})
    assert caught.value.cause == "harness_missing"
    assert str(caught.value) == sentence
