"""The pi harness lane against a fake ``pi`` on PATH: what the session is started with, what
comes back, the repair turn and a failed model call (the CLI checks: test_cli_checks.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.harness_lanes.pi import PiLane
from active_memory.agents.providers.base import ModelRequest
from active_memory.errors import ProviderError
from active_memory.lanes import SPECIALIST_SESSION_MARKER, SPECIALIST_SESSION_VARIABLE
from active_memory.models.runs import Binding
from agents.harness_lanes.lane_kit import env_for, flag, request_for, run_session
from fake_pi import SESSION, install_fake_pi, model_error, success

pytestmark = pytest.mark.timeout(60)

BINDING = Binding(provider="anthropic", model="claude-sonnet-4-5", effort="high", lane="pi")


def _request(folders: dict[str, Path], **given: Any) -> ModelRequest:
    return request_for(BINDING, folders, **given)


def test_a_session_has_read_tools_only_no_extensions_and_is_marked(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_pi(tmp_path / "bin", [success({"lessons": []})])
    env = env_for(fake, ACTIVE_MEMORY_TOKEN="t", KEEP="me")
    response = asyncio.run(PiLane(BINDING, env=env).complete(_request(folders)))
    assert response.answer == '{"lessons": []}'
    [call] = fake.calls()
    argv = call["argv"]
    assert argv[:5] == ["-p", "--mode", "json", "--model", "claude-sonnet-4-5"]
    assert flag(argv, "--thinking") == "high"
    assert flag(argv, "--tools") == "read,grep,find,ls"
    for switch in ("--no-extensions", "--no-skills", "--no-prompt-templates",
                   "--no-context-files"):  # fmt: skip
        assert switch in argv
    assert "--session" not in argv
    system = flag(argv, "--system-prompt")
    assert system.startswith("You are the graph discovery specialist.")
    assert f"- `evidence`: the folder {folders['evidence']}" in system
    assert call["cwd"] == str(folders["repository"])
    assert call["stdin"] == f"{SPECIALIST_SESSION_MARKER}\n\nThe evidence follows."
    assert call["env"][SPECIALIST_SESSION_VARIABLE] == "1"
    assert call["env"]["KEEP"] == "me"
    assert "ACTIVE_MEMORY_TOKEN" not in call["env"]


def test_no_effort_is_thinking_off(tmp_path: Path, folders: dict[str, Path]) -> None:
    fake = install_fake_pi(tmp_path / "bin", [success({"lessons": []})])
    lane = PiLane(BINDING.model_copy(update={"effort": "none"}), env=env_for(fake))
    asyncio.run(lane.complete(_request(folders, effort="none")))
    assert flag(fake.calls()[0]["argv"], "--thinking") == "off"


def test_usage_tool_calls_and_the_files_read_come_back(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    calls = [
        ("read", {"path": "src/app.py"}, True),  # relative to the working directory
        ("read", {"path": str(folders["evidence"] / "run.json")}, True),
        ("grep", {"pattern": "x", "path": "README.md"}, True),
        ("read", {"path": "gone.py"}, False),
        ("bash", {"command": "touch x"}, False),
    ]
    fake = install_fake_pi(tmp_path / "bin", [success({"lessons": []}, calls=calls)])
    response = asyncio.run(PiLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.read_paths == frozenset({"repository:src/app.py", "evidence:run.json"})
    assert response.harness_tool_calls == 5
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (6 * 2900, 6 * 60)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (6 * 2000, 0)
    assert response.model == "claude-sonnet-4-5"


@pytest.mark.parametrize(
    "call",
    [
        ("read", {"path": "{outside}/secret.txt"}),
        ("read", {"path": "@{outside}/secret.txt"}),
        ("read", {"path": "~/.ssh/id_ed25519"}),
        ("grep", {"pattern": "key", "path": ".."}),
        ("find", {"pattern": "*.txt", "path": "/"}),
        ("ls", {"path": "{outside}"}),
    ],
)
def test_a_session_whose_tools_ran_outside_its_folders_is_failed(
    tmp_path: Path, folders: dict[str, Path], call: tuple[str, dict[str, str]]
) -> None:
    name, given = call
    filled = {key: value.format(outside=tmp_path) for key, value in given.items()}
    reply = success({"lessons": []}, calls=[(name, filled, True)])
    fake = install_fake_pi(tmp_path / "bin", [reply])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(PiLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "read_outside_checkout"
    assert "the specialist's answer was not used" in str(caught.value)


def test_an_invalid_answer_is_repaired_once_by_resuming_the_same_session(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    replies = [success({"lessons": [3]}), success({"lessons": ["fixed"]})]
    fake = install_fake_pi(tmp_path / "bin", replies)
    lane = PiLane(BINDING, env=env_for(fake))
    result = run_session(lane, BINDING, folders)
    assert result.answer == {"lessons": ["fixed"]}
    assert result.repaired
    _, second = fake.calls()
    assert flag(second["argv"], "--session") == SESSION
    assert flag(second["argv"], "--tools") == "read,grep,find,ls"
    assert second["stdin"].startswith("Your answer does not satisfy the graph_discovery contract:")


def test_a_session_that_ran_a_tool_beyond_reading_is_not_used(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    calls = [("write", {"path": "x", "content": "y"}, True)]
    fake = install_fake_pi(tmp_path / "bin", [success({"lessons": []}, calls=calls)])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(PiLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "harness_tools_not_restricted"
    assert "(write)" in str(caught.value)


def test_a_failed_model_call_says_why(tmp_path: Path, folders: dict[str, Path]) -> None:
    fake = install_fake_pi(tmp_path / "bin", [model_error("500 upstream overloaded")])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(PiLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "harness_failed"
    assert "`pi` exited 1 without a result: 500 upstream overloaded" in str(caught.value)
