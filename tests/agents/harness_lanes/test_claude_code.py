"""The Claude Code harness lane against a fake ``claude`` on PATH: what the session is started
with, what comes back, the repair turn, and a CLI that is missing, too old or logged out."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.harness_lanes.claude_code import ClaudeCodeLane
from active_memory.agents.providers.base import ModelRequest
from active_memory.agents.providers.registry import create_provider
from active_memory.errors import ProviderError
from active_memory.lanes import SPECIALIST_SESSION_MARKER, SPECIALIST_SESSION_VARIABLE
from active_memory.models.runs import Binding
from agents.harness_lanes.lane_kit import env_for, flag, request_for, run_session
from fake_claude import install_fake_claude, max_turns, success

pytestmark = pytest.mark.timeout(60)

LANE = "claude-code"
BINDING = Binding(provider="anthropic", model="claude-sonnet-4-5", effort="high", lane=LANE)


def _request(folders: dict[str, Path], **given: Any) -> ModelRequest:
    return request_for(BINDING, folders, **given)


def test_a_session_runs_read_only_without_hooks_in_the_checkout_and_marked(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_claude(tmp_path / "bin", [success({"lessons": []})])
    env = env_for(fake, ACTIVE_MEMORY_TOKEN="run-token", CLAUDECODE="1", KEEP="me")
    lane = ClaudeCodeLane(BINDING, env=env)
    response = asyncio.run(lane.complete(_request(folders)))
    assert response.answer == '{"lessons": []}'
    [call] = fake.calls()
    argv = call["argv"]
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--model"]
    assert flag(argv, "--model") == "claude-sonnet-4-5"
    assert flag(argv, "--effort") == "high"
    assert flag(argv, "--tools") == "Read,Grep,Glob"
    # Claude Code applies Read rules to Grep and Glob; `//` anchors a rule at the root.
    assert flag(argv, "--allowedTools") == (
        f"Read(/{folders['evidence'].resolve()}/**),Read(/{folders['repository'].resolve()}/**)"
    )
    denied = flag(argv, "--disallowedTools").split(",")
    assert {"Bash", "Write", "Edit", "WebFetch", "WebSearch", "Task"} <= set(denied)
    assert flag(argv, "--permission-mode") == "dontAsk"
    assert "--strict-mcp-config" in argv
    assert flag(argv, "--mcp-config") == '{"mcpServers": {}}'
    assert flag(argv, "--settings") == '{"disableAllHooks": true}'
    assert flag(argv, "--json-schema").startswith('{"additionalProperties": false')
    assert flag(argv, "--add-dir") == str(folders["evidence"])
    assert flag(argv, "--name") == "active-memory specialist session batch 0"
    assert "--resume" not in argv
    system = flag(argv, "--system-prompt")
    assert system.startswith("You are the graph discovery specialist.")
    assert f"- `repository`: the folder {folders['repository']}" in system
    assert call["cwd"] == str(folders["repository"])
    assert call["stdin"] == f"{SPECIALIST_SESSION_MARKER}\n\nThe evidence follows."
    assert call["env"][SPECIALIST_SESSION_VARIABLE] == "1"
    assert call["env"]["KEEP"] == "me"
    assert "ACTIVE_MEMORY_TOKEN" not in call["env"]
    assert "CLAUDECODE" not in call["env"]


def test_a_symlinked_folder_is_allowed_as_named_and_as_resolved(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    linked = tmp_path / "linked-checkout"
    linked.symlink_to(folders["repository"])
    fake = install_fake_claude(tmp_path / "bin", [success({"lessons": []})])
    lane = ClaudeCodeLane(BINDING, env=env_for(fake))
    asyncio.run(lane.complete(_request({**folders, "repository": linked})))
    [call] = fake.calls()
    allowed = flag(call["argv"], "--allowedTools").split(",")
    assert f"Read(/{linked}/**)" in allowed
    assert f"Read(/{folders['repository'].resolve()}/**)" in allowed


def test_without_a_checkout_the_evidence_folder_is_the_working_directory(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_claude(tmp_path / "bin", [success({"lessons": []})])
    lane = ClaudeCodeLane(BINDING.model_copy(update={"effort": "none"}), env=env_for(fake))
    only_evidence = {"evidence": folders["evidence"]}
    asyncio.run(lane.complete(_request(only_evidence, effort="none")))
    [call] = fake.calls()
    assert call["cwd"] == str(folders["evidence"])
    assert "--add-dir" not in call["argv"]
    assert "--effort" not in call["argv"]
    assert call["env"]["MAX_THINKING_TOKENS"] == "0"


def test_usage_tool_calls_and_the_files_read_come_back(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    app = folders["repository"] / "src" / "app.py"
    outside = tmp_path / "elsewhere.txt"
    reply = success({"lessons": []}, reads=[str(app), str(outside)], denied=["Bash", "Write"])
    # A read the CLI refused (outside the folders) comes back as an error: nothing was shown.
    reply["events"][4]["message"]["content"][0]["is_error"] = True
    fake = install_fake_claude(tmp_path / "bin", [reply])
    response = asyncio.run(ClaudeCodeLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.read_paths == frozenset({"repository:src/app.py"})
    assert response.harness_tool_calls == 4
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (5900, 120)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (4000, 1000)
    assert response.model == "claude-sonnet-4-5"


def test_a_relative_read_is_the_file_in_the_working_directory(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    # As the outside check takes it: from the session's working directory (the checkout), not
    # from wherever the host process runs.
    reply = success({"lessons": []}, reads=["src/app.py"])
    fake = install_fake_claude(tmp_path / "bin", [reply])
    response = asyncio.run(ClaudeCodeLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.read_paths == frozenset({"repository:src/app.py"})


def test_an_invalid_answer_is_repaired_once_by_resuming_the_same_session(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    replies = [success({"lessons": [3]}), success({"lessons": ["fixed"]})]
    fake = install_fake_claude(tmp_path / "bin", replies)
    lane = ClaudeCodeLane(BINDING, env=env_for(fake))
    result = run_session(lane, BINDING, folders)
    assert result.answer == {"lessons": ["fixed"]}
    assert result.repaired
    assert result.usage.output_tokens == 240
    first, second = fake.calls()
    assert flag(second["argv"], "--resume") == flag(first["argv"], "--session-id")
    assert "--session-id" not in second["argv"]
    assert second["stdin"].startswith("Your answer does not satisfy the graph_discovery contract:")
    assert "3 is not of type 'string'" in second["stdin"]


def test_a_session_out_of_turns_gets_the_repair_turn(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_claude(tmp_path / "bin", [max_turns(), success({"lessons": []})])
    lane = ClaudeCodeLane(BINDING, env=env_for(fake))
    result = run_session(lane, BINDING, folders, prompt="go")
    assert result.repaired
    assert len(fake.calls()) == 2
    assert "no answer was given" in fake.calls()[1]["stdin"]


def test_a_claude_that_offers_more_than_read_only_tools_is_not_used(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    reply = success({"lessons": []})
    reply["events"][0]["tools"] = ["Bash", "Read", "StructuredOutput"]
    fake = install_fake_claude(tmp_path / "bin", [reply])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(ClaudeCodeLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "harness_tools_not_restricted"


@pytest.mark.parametrize(
    "call",
    [
        ("Read", {"file_path": "{outside}/secret.txt"}),
        ("Read", {"file_path": "{checkout}/../secret.txt"}),
        ("Grep", {"pattern": "key", "path": "{outside}"}),
        ("Glob", {"pattern": "*.txt", "path": "{outside}"}),
        ("Glob", {"pattern": "{outside}/*.txt"}),
    ],
)
def test_a_session_that_read_outside_its_folders_is_failed_before_its_answer_is_used(
    tmp_path: Path, folders: dict[str, Path], call: tuple[str, dict[str, str]]
) -> None:
    name, given = call
    places = {"outside": str(tmp_path), "checkout": str(folders["repository"])}
    filled = {key: value.format(**places) for key, value in given.items()}
    reply = success({"lessons": []}, searches=[(name, filled)])
    fake = install_fake_claude(tmp_path / "bin", [reply])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(ClaudeCodeLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "read_outside_checkout"
    assert "read outside the checkout and the evidence folder" in str(caught.value)


def test_searches_inside_the_checkout_and_the_evidence_folder_are_allowed(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    searches = [
        ("Grep", {"pattern": "print", "path": str(folders["repository"])}),
        ("Grep", {"pattern": "print"}),
        ("Glob", {"pattern": "**/*.py", "path": "src"}),
        ("Glob", {"pattern": f"{folders['evidence']}/*.json"}),
    ]
    reply = success({"lessons": []}, reads=[str(folders["evidence"] / "run.json")],
                    searches=searches)  # fmt: skip
    fake = install_fake_claude(tmp_path / "bin", [reply])
    response = asyncio.run(ClaudeCodeLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.answer == '{"lessons": []}'
    assert response.read_paths == frozenset({"evidence:run.json"})


def test_the_binding_lane_chooses_the_harness_and_a_connection_keeps_the_api(
    tmp_path: Path,
) -> None:
    from active_memory.agents.providers.connections import Connection

    fake = install_fake_claude(tmp_path / "bin", [])
    assert isinstance(create_provider(BINDING, env=env_for(fake)), ClaudeCodeLane)
    own = Connection("override", base_url="http://127.0.0.1:9", api_key_env=None)
    routed = create_provider(BINDING, env=env_for(fake), connection=own)
    assert not isinstance(routed, ClaudeCodeLane)
    assert getattr(routed, "lane", None) == "anthropic"


@pytest.mark.parametrize(
    ("stderr", "cause", "said"),
    [
        ("error: unknown option '--json-schema'\n", "harness_too_old", "`claude update`"),
        (
            "Segmentation fault\n",
            "harness_failed",
            "`claude` exited 139 without a result: Segmentation",
        ),
    ],
)
def test_a_run_without_a_result_says_why(
    tmp_path: Path, folders: dict[str, Path], stderr: str, cause: str, said: str
) -> None:
    fake = install_fake_claude(tmp_path / "bin", [{"stderr": stderr, "exit": 139}])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(ClaudeCodeLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == cause
    assert said in str(caught.value)
