"""The Codex harness lane against a fake ``codex`` on PATH: what the session is started with,
what comes back, the repair turn, and a CLI that is missing, too old or logged out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.harness_lanes.codex import CodexLane
from active_memory.agents.harness_lanes.codex_events import files_printed
from active_memory.agents.providers.base import ModelRequest
from active_memory.errors import ProviderError
from active_memory.lanes import SPECIALIST_SESSION_MARKER, SPECIALIST_SESSION_VARIABLE
from active_memory.models.runs import Binding
from agents.harness_lanes.lane_kit import CONTRACT, env_for, flag, flags, request_for, run_session
from fake_codex import THREAD, failed, install_fake_codex, success

pytestmark = pytest.mark.timeout(60)

LANE = "codex"
BINDING = Binding(provider="openai", model="gpt-5.1-codex", effort="high", lane=LANE)


def _request(folders: dict[str, Path], **given: Any) -> ModelRequest:
    return request_for(BINDING, folders, **given)


def test_a_session_runs_in_the_read_only_sandbox_without_hooks_or_mcp_and_marked(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_codex(tmp_path / "bin", [success({"lessons": []})])
    env = env_for(fake, ACTIVE_MEMORY_TOKEN="run-token", KEEP="me")
    response = asyncio.run(CodexLane(BINDING, env=env).complete(_request(folders)))
    assert response.answer == '{"lessons": []}'
    [call] = fake.calls()
    argv = call["argv"]
    assert argv[:4] == ["exec", "--json", "--skip-git-repo-check", "--ignore-rules"]
    assert argv[-3:] == ["-C", str(folders["repository"]), "-"]
    assert flag(argv, "-m") == "gpt-5.1-codex"
    overrides = flags(argv, "-c")
    assert 'model_reasoning_effort="high"' in overrides
    assert 'sandbox_mode="read-only"' in overrides
    assert 'approval_policy="never"' in overrides
    assert 'web_search="disabled"' in overrides
    assert "mcp_servers={}" in overrides
    assert {"hooks", "multi_agent", "apps", "plugins"} <= set(flags(argv, "--disable"))
    [instructions] = [o for o in overrides if o.startswith("developer_instructions=")]
    system = json.loads(instructions.removeprefix("developer_instructions="))
    assert system.startswith("You are the graph discovery specialist.")
    assert f"- `repository`: the folder {folders['repository']}" in system
    schema = call["files"][flag(argv, "--output-schema")]
    assert json.loads(schema) == CONTRACT.schema
    assert not Path(flag(argv, "--output-schema")).exists()  # a temporary file, gone
    assert call["cwd"] == str(folders["repository"])
    assert call["stdin"] == f"{SPECIALIST_SESSION_MARKER}\n\nThe evidence follows."
    assert call["env"][SPECIALIST_SESSION_VARIABLE] == "1"
    assert call["env"]["KEEP"] == "me"
    assert "ACTIVE_MEMORY_TOKEN" not in call["env"]


def test_without_a_checkout_the_evidence_folder_is_the_working_root(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_codex(tmp_path / "bin", [success({"lessons": []})])
    lane = CodexLane(BINDING.model_copy(update={"effort": None}), env=env_for(fake))
    asyncio.run(lane.complete(_request({"evidence": folders["evidence"]}, effort=None)))
    [call] = fake.calls()
    assert call["cwd"] == str(folders["evidence"])
    assert flag(call["argv"], "-C") == str(folders["evidence"])
    assert not any(o.startswith("model_reasoning_effort") for o in flags(call["argv"], "-c"))


def test_usage_commands_and_the_files_they_printed_come_back(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    commands = [
        ("cat src/app.py", 0),
        ("sed -n '1,40p' README.md | head -5", 0),
        ("rg -n widget ../evidence/run.json", 0),  # a search shows matches, not the file
        ("cat missing.py", 1),
        ("touch planted", 1),  # refused by the sandbox
    ]
    fake = install_fake_codex(tmp_path / "bin", [success({"lessons": []}, commands=commands)])
    response = asyncio.run(CodexLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.read_paths == frozenset({"repository:src/app.py", "repository:README.md"})
    assert response.harness_tool_calls == 5
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (5900, 120)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (4000, 0)
    assert response.model == "gpt-5.1-codex"


@pytest.mark.parametrize(
    ("command", "exit_code"),
    [
        ("cat {outside}/secret.txt", 0),
        ("cat ../secret.txt", 0),
        ("cat {outside}/secret.txt missing.py", 1),  # failed, but it printed the secret
        ("head -5 {outside}/*.txt", 0),
        ("cd {outside} && cat secret.txt", 0),
        ("rg -n key --file={outside}/secret.txt", 0),
        ("cat $HOME/.ssh/id_ed25519", 0),
        ("cat $(printf /etc/hostname)", 0),
        ("cat `echo /etc/hostname`", 0),
        ("cat 'unterminated", 0),
    ],
)
def test_a_command_that_reaches_outside_the_folders_fails_the_session(
    tmp_path: Path, folders: dict[str, Path], command: str, exit_code: int
) -> None:
    (tmp_path / "secret.txt").write_text("TOP-SECRET\n")
    ran = command.format(outside=tmp_path)
    fake = install_fake_codex(
        tmp_path / "bin", [success({"lessons": []}, commands=[(ran, exit_code)])]
    )
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CodexLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "read_outside_checkout"


def test_commands_inside_the_folders_are_not_refused(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    commands = [
        ("rg -n '/api/' src", 0),  # a pattern, not a path: nothing of that name exists
        (f"cat {folders['repository']}/README.md ../evidence/run.json", 0),
        ("grep -rn 'x$' .", 1),
    ]
    fake = install_fake_codex(tmp_path / "bin", [success({"lessons": []}, commands=commands)])
    response = asyncio.run(CodexLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert response.answer == '{"lessons": []}'


def test_files_printed_reads_the_script_codex_wraps_in_bash(tmp_path: Path) -> None:
    (tmp_path / "a b.txt").write_text("x")
    (tmp_path / "c.py").write_text("x")
    command = "/bin/bash -lc \"cat 'a b.txt' && nl -ba c.py; echo c.py; head -n 3 gone\""
    assert files_printed(command, tmp_path) == (tmp_path / "a b.txt", tmp_path / "c.py")
    assert files_printed("/bin/bash -lc 'cat \"unclosed'", tmp_path) == ()


def test_an_invalid_answer_is_repaired_once_by_resuming_the_same_thread(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    replies = [success({"lessons": [3]}), success({"lessons": ["fixed"]})]
    fake = install_fake_codex(tmp_path / "bin", replies)
    lane = CodexLane(BINDING, env=env_for(fake))
    result = run_session(lane, BINDING, folders)
    assert result.answer == {"lessons": ["fixed"]}
    assert result.repaired
    assert result.usage.output_tokens == 240
    _, second = fake.calls()
    assert second["argv"][:2] == ["exec", "resume"]
    assert second["argv"][-2:] == [THREAD, "-"]
    assert "-C" not in second["argv"]
    assert 'sandbox_mode="read-only"' in flags(second["argv"], "-c")
    assert "hooks" in flags(second["argv"], "--disable")
    assert second["stdin"].startswith("Your answer does not satisfy the graph_discovery contract:")


def test_a_session_with_no_message_gets_the_repair_turn(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    fake = install_fake_codex(tmp_path / "bin", [success(None), success({"lessons": []})])
    result = run_session(CodexLane(BINDING, env=env_for(fake)), BINDING, folders, prompt="go")
    assert result.repaired
    assert "no answer was given" in fake.calls()[1]["stdin"]


def test_a_session_that_wrote_or_searched_the_web_is_not_used(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    change = {"id": "item_5", "type": "file_change", "status": "completed",
              "changes": [{"path": "x", "kind": "add"}]}  # fmt: skip
    fake = install_fake_codex(tmp_path / "bin", [success({"lessons": []}, items=[change])])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CodexLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == "harness_tools_not_restricted"
    assert "(file_change)" in str(caught.value)


@pytest.mark.parametrize(
    ("reply", "cause", "said"),
    [
        ({"stderr": "error: unexpected argument '--ignore-rules' found\n", "exit": 2},
         "harness_too_old", "npm install -g @openai/codex"),
        (failed("stream disconnected before completion"), "harness_failed",
         "`codex` exited 1 without a result: stream disconnected before completion"),
    ],
)  # fmt: skip
def test_a_run_without_a_finished_turn_says_why(
    tmp_path: Path, folders: dict[str, Path], reply: dict[str, Any], cause: str, said: str
) -> None:
    fake = install_fake_codex(tmp_path / "bin", [reply])
    with pytest.raises(ProviderError) as caught:
        asyncio.run(CodexLane(BINDING, env=env_for(fake)).complete(_request(folders)))
    assert caught.value.cause == cause
    assert said in str(caught.value)
