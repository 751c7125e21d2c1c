"""The Copilot CLI harness lane against a fake ``copilot`` on PATH: what the session is started
with, what comes back, the repair turn, and a CLI that is too old or logged out."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.harness_lanes.copilot import CopilotLane
from active_memory.agents.providers.base import ModelRequest
from active_memory.errors import ProviderError
from active_memory.lanes import SPECIALIST_SESSION_MARKER, SPECIALIST_SESSION_VARIABLE
from active_memory.models.runs import Binding
from agents.harness_lanes.lane_kit import env_for, flag, flags, request_for, run_session
from fake_copilot import failed, install_fake_copilot, success

pytestmark = pytest.mark.timeout(60)

BINDING = Binding(provider="openai", model="gpt-5.4", effort="high", lane="copilot")


def _request(folders: dict[str, Path], **given: Any) -> ModelRequest:
    return request_for(BINDING, folders, **given)


def test_a_session_sees_only_read_tools_denies_shell_writes_and_urls_and_is_marked(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_copilot(tmp_path / "bin", [success({"lessons": []})])
    env = env_for(fake, ACTIVE_MEMORY_TOKEN="t", COPILOT_ALLOW_ALL="true", KEEP="me",
               GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS="true")  # fmt: skip
    response = asyncio.run(CopilotLane(BINDING, env=env).complete(_request(folders)))
    assert response.answer == '{"lessons": []}'
    [call] = fake.calls()
    argv = call["argv"]
    assert argv[:4] == ["--output-format", "json", "--model", "gpt-5.4"]
    assert flag(argv, "--reasoning-effort") == "high"
    assert flag(argv, "--available-tools") == "view,grep,glob"
    assert flags(argv, "--deny-tool") == ["shell", "write", "url"]
    for switch in ("--disable-builtin-mcps", "--no-custom-instructions", "--no-ask-user",
                   "--disallow-temp-dir"):  # fmt: skip
        assert switch in argv
    assert "--allow-all-tools" not in argv
    assert "--allow-all" not in argv
    assert flag(argv, "--add-dir") == str(folders["evidence"])
    assert "--resume" not in argv
    assert len(flag(argv, "--session-id")) == 36
    assert call["cwd"] == str(folders["repository"])
    prompt = call["stdin"]
    assert prompt.startswith(f"{SPECIALIST_SESSION_MARKER}\n\nYou are the graph discovery")
    assert f"- `repository`: the folder {folders['repository']}" in prompt
    assert "satisfies the graph_discovery contract" in prompt
    assert prompt.endswith("---\n\nThe evidence follows.")
    assert call["env"][SPECIALIST_SESSION_VARIABLE] == "1"
    assert call["env"]["KEEP"] == "me"
    for dropped in ("ACTIVE_MEMORY_TOKEN", "COPILOT_ALLOW_ALL",
                    "GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS"):  # fmt: skip
        assert dropped not in call["env"]


def test_usage_comes_from_the_usage_file_and_the_files_viewed_are_read(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    app = folders["repository"] / "src" / "app.py"
    calls = [
        ("view", {"path": str(app)}, True),
        ("view", {"path": "README.md"}, True),  # relative to the working directory
        ("grep", {"pattern": "x", "path": "../evidence/run.json"}, True),
        ("view", {"path": str(tmp_path / "elsewhere.txt")}, False),  # outside: refused
        ("bash", {"command": "touch x"}, False),
    ]
    fake = install_fake_copilot(tmp_path / "bin", [success({"lessons": []}, calls=calls)])
    response = asyncio.run(CopilotLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.read_paths == frozenset({"repository:src/app.py", "repository:README.md"})
    assert response.harness_tool_calls == 5
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (5900, 120)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (4000, 0)
    assert response.model == "gpt-5.4"


@pytest.mark.parametrize(
    "call",
    [
        ("view", {"path": "{outside}/secret.txt"}),
        ("view", {"path": "../secret.txt"}),
        ("grep", {"pattern": "key", "path": "{outside}"}),
        ("glob", {"pattern": "*.txt", "path": "~"}),
    ],
)
def test_a_session_whose_tools_ran_outside_its_folders_is_failed(
    tmp_path: Path, folders: dict[str, Path], call: tuple[str, dict[str, str]]
) -> None:
    name, given = call
    filled = {key: value.format(outside=tmp_path) for key, value in given.items()}
    reply = success({"lessons": []}, calls=[(name, filled, True)])
    fake = install_fake_copilot(tmp_path / "bin", [reply])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CopilotLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "read_outside_checkout"


def test_an_invalid_answer_is_repaired_once_by_resuming_the_same_session(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    replies = [success({"lessons": [3]}), success({"lessons": ["fixed"]})]
    fake = install_fake_copilot(tmp_path / "bin", replies)
    lane = CopilotLane(BINDING, env=env_for(fake))
    result = run_session(lane, BINDING, folders)
    assert result.answer == {"lessons": ["fixed"]}
    assert result.repaired
    assert result.usage.output_tokens == 240
    first, second = fake.calls()
    assert flag(second["argv"], "--resume") == flag(first["argv"], "--session-id")
    assert "--session-id" not in second["argv"]
    assert flag(second["argv"], "--available-tools") == "view,grep,glob"
    assert second["stdin"].startswith("Your answer does not satisfy the graph_discovery contract:")


def test_a_session_that_ran_a_tool_beyond_reading_is_not_used(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    calls = [("bash", {"command": "touch x"}, True)]
    fake = install_fake_copilot(tmp_path / "bin", [success({"lessons": []}, calls=calls)])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CopilotLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "harness_tools_not_restricted"
    assert "(bash)" in str(caught.value)


def test_a_run_that_fails_says_why(tmp_path: Path, folders: dict[str, Path]) -> None:
    fake = install_fake_copilot(tmp_path / "bin", [failed("Model stand-in is not available")])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CopilotLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "harness_failed"
    assert "`copilot` exited 1 without a result: Model stand-in is not available" in str(
        caught.value
    )
