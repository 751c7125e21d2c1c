"""Wiring a harness from a host: each harness reaches this run's broker, and the run records it."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from active_memory.errors import RecallError
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import ActiveMemoryConfig, RuntimeConfig
from active_memory.store.backend import RunIdentity
from recall.kit import GRAPH, REPOSITORY, FakeBackend, lesson, lesson_id

CONVERSATION = "conv 1/ü$HOME"  # spaces, a slash, non-ASCII and a "$" survive the headers


def opened(workspace: Path, **memory: bool) -> ActiveRun:
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=GRAPH)
    config = RuntimeConfig(active_memory=ActiveMemoryConfig(**memory))
    return open_run(identity, config, FakeBackend([lesson(1, files=["src/a.py"])]), workspace)


def post(hook: dict[str, Any], payload: dict[str, Any]) -> tuple[int, bytes]:
    """What Claude Code does with an ``http`` hook: POST the payload with the hook's headers."""
    url = urlsplit(hook["url"])
    assert url.hostname == "127.0.0.1"
    assert url.port is not None
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
    try:
        headers = {**hook["headers"], "Content-Type": "application/json"}
        connection.request("POST", url.path, json.dumps(payload).encode(), headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def claude_read(workspace: Path) -> dict[str, Any]:
    return {"session_id": "claude-session-9", "cwd": str(workspace),
            "hook_event_name": "PreToolUse", "tool_name": "Read",
            "tool_input": {"file_path": str(workspace / "src" / "a.py")}}  # fmt: skip


def test_claude_gets_a_per_run_http_hook_that_records_into_this_run(tmp_path: Path) -> None:
    with opened(tmp_path) as run:
        wiring = run.harness_wiring("claude", "build", CONVERSATION, "exec-1")
        host, port = run.broker().address
        hook = dict(wiring.hook or {})
        assert hook["type"] == "http"
        assert hook["url"] == f"http://{host}:{port}/hook/claude"
        assert hook["headers"]["Authorization"] == f"Bearer {run.broker().token}"
        assert "allowedEnvVars" not in hook  # every value is literal: nothing read from env
        assert "$" not in json.dumps(hook["headers"])
        assert wiring.settings is not None
        assert list(wiring.settings) == ["hooks"]
        assert list(wiring.settings["hooks"]) == ["PreToolUse"]
        assert wiring.settings["hooks"]["PreToolUse"][0]["hooks"] == [hook]
        assert "Read" in wiring.settings["hooks"]["PreToolUse"][0]["matcher"]
        assert wiring.env == {**wiring.env, "ACTIVE_MEMORY_CONVERSATION": CONVERSATION}
        status, body = post(hook, claude_read(tmp_path))
        assert status == 200
        context = json.loads(body)["hookSpecificOutput"]["additionalContext"]
        assert f"[{lesson_id(1)}@1]" in context
        assert post(hook, claude_read(tmp_path)) == (200, b"{}")  # once per conversation
    delivered = [(d.node_id, d.conversation_id, d.execution, d.channel) for d in run.deliveries]
    # Recorded under the host's ids, not Claude's own session id.
    assert delivered == [("build", CONVERSATION, "exec-1", "hook")]
    assert [(r.tool, r.paths, r.execution) for r in run.receipts] == [
        ("Read", ("src/a.py",), "exec-1")
    ] * 2


def test_the_claude_settings_file_is_private_and_loads_back(tmp_path: Path) -> None:
    with opened(tmp_path) as run:
        wiring = run.harness_wiring("claude", "build", "conv-1")
        path = wiring.write_settings(tmp_path / "run-settings" / "claude.json")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(path.read_text("utf-8")) == wiring.settings
        wiring.write_settings(path)  # writing again replaces it
        assert json.loads(path.read_text("utf-8")) == wiring.settings


def test_a_wrong_token_in_the_hook_records_nothing(tmp_path: Path) -> None:
    with opened(tmp_path) as run:
        hook = dict(run.harness_wiring("claude", "build", "conv-1").hook or {})
        hook["headers"] = {**hook["headers"], "Authorization": "Bearer not-the-token"}
        assert post(hook, claude_read(tmp_path))[0] == 401
    assert run.deliveries == ()
    assert run.receipts == ()


def _copilot_view(workspace: Path) -> dict[str, Any]:
    return {"sessionId": "copilot-7", "timestamp": 1, "cwd": str(workspace), "toolName": "view",
            "toolArgs": json.dumps({"path": str(workspace / "src" / "a.py")})}  # fmt: skip


def _codex_bash(workspace: Path) -> dict[str, Any]:
    return {"session_id": "codex-3", "cwd": str(workspace), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "cat src/a.py"}}  # fmt: skip


@pytest.mark.parametrize("harness", ["codex", "copilot"])
def test_command_hooks_reach_this_run_through_the_env(tmp_path: Path, harness: str) -> None:
    with opened(tmp_path) as run:
        wiring = run.harness_wiring(harness, "build", CONVERSATION, "exec-1")
        hook = dict(wiring.hook or {})
        command = hook["command"] if harness == "codex" else hook["bash"]
        assert run.broker().token not in command  # the command holds nothing of the run
        assert str(wiring.env["ACTIVE_MEMORY_TICKET"]) not in command
        if harness == "codex":
            assert wiring.settings is not None
            groups = wiring.settings["hooks"]["PreToolUse"]
            assert groups[0]["hooks"] == [hook]
            payload = _codex_bash(tmp_path)
        else:
            assert wiring.settings == {"version": 1, "hooks": {"preToolUse": [hook]}}
            payload = _copilot_view(tmp_path)
        env = {"PATH": os.environ.get("PATH", ""), **wiring.env}
        # The helper answers {} when the broker has not answered within its 250 ms budget, as
        # it must; on a loaded machine that can happen once. A delivery is committed only
        # after the helper's ack, so asking again is asking for the same, first delivery.
        for _attempt in range(3):
            done = subprocess.run(
                command, shell=True, input=json.dumps(payload), env=env, capture_output=True,
                text=True, timeout=30, check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            if done.stdout.strip() != "{}":
                break
        assert f"[{lesson_id(1)}@1]" in done.stdout
        # The same command without the run's environment reaches no broker and answers {}.
        bare = subprocess.run(
            command, shell=True, input=json.dumps(payload), env={"PATH": env["PATH"]},
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert (bare.returncode, bare.stdout.strip()) == (0, "{}")
    assert [(d.conversation_id, d.execution) for d in run.deliveries] == [(CONVERSATION, "exec-1")]
    assert run.receipts[0].execution == "exec-1"


def test_pi_gets_its_extension_on_the_command_line(tmp_path: Path) -> None:
    with opened(tmp_path) as run:
        wiring = run.harness_wiring("pi", "build", "conv-1")
    assert wiring.args[0] == "-e"
    extension = Path(wiring.args[1])
    assert extension.is_file()
    assert "ACTIVE_MEMORY_BROKER" in extension.read_text("utf-8")
    assert (wiring.hook, wiring.settings) == (None, None)
    assert wiring.env["ACTIVE_MEMORY_NODE"] == "build"
    with pytest.raises(RecallError, match="pi has no hook file"):
        wiring.write_settings(tmp_path / "pi.json")


def test_an_unknown_harness_is_refused_before_the_broker_starts(tmp_path: Path) -> None:
    with opened(tmp_path) as run:
        with pytest.raises(RecallError, match="unknown harness 'cursor'; choose one of claude"):
            run.harness_wiring("cursor", "build", "conv-1")
        assert run._broker is None


def test_with_memory_disabled_the_wiring_is_empty(tmp_path: Path) -> None:
    with opened(tmp_path, repository=False, graph=False) as run:
        wiring = run.harness_wiring("claude", "build", "conv-1")
        assert (dict(wiring.env), wiring.hook, wiring.settings, wiring.args) == ({}, None, None, ())
        assert run._broker is None


def test_the_command_hooks_run_the_given_interpreter(tmp_path: Path) -> None:
    with opened(tmp_path) as run:
        hook = run.harness_wiring("codex", "build", "c", python="/opt/py/bin/python3").hook
        assert hook is not None
        assert "out=$(/opt/py/bin/python3 -I -S " in hook["command"]  # fail-soft wrapped
        default = run.harness_wiring("codex", "build", "c").hook
        assert default is not None
        assert f"out=$({shlex.quote(sys.executable)} " in default["command"]
