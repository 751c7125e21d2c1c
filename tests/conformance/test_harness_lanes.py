"""Conformance: a specialist session run by the real harness CLIs (the claude-code, codex,
copilot and pi harness lanes), against a scripted model on loopback.

Slow: it starts the pinned CLIs from the conformance kit (``harnesses.py``; skipped with npm's
reason when one cannot be installed). ``active-memory specialist run graph_discovery RUN
--lane LANE`` runs with the stand-in as the harness's model. The model reads a checkout file
with the harness's own read tool, tries to write (and, where the harness has one, to run a
shell command), then answers. The tests assert what the issue asks of a harness lane:

* the read went through the harness's own tool and its content reached the model, while Claude
  Code itself refused a Read, Grep and Glob outside the checkout (``test_harness_reads.py``
  has the other harnesses' reads outside it);
* the write and shell attempts were refused by the harness itself (not offered, or refused by
  Codex's read-only sandbox: no file made), and the model was offered only read tools;
* a project hook in the checkout never ran;
* the host admitted the answer, and recorded the session's tokens and tool calls;
* a session whose model never answers ends at the deadline with no process of it left.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from active_memory.harnesses import harness_row
from conformance.harnesses import HARNESSES, Harness, Installed
from conformance.openai_specialist import (
    ANSWER,
    READ_TOOLS,
    ScriptedOpenAISpecialist,
    openai_results,
    run_on,
)
from conformance.stand_in import (
    Recorded,
    StandIn,
    ToolCall,
    _anthropic,
    tool_names,
)
from postmortem.postmortem_kit import first_run

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]

READ_TARGET = "pyproject.toml"
# A file beside the run folder, outside the checkout: no specialist may read it.
SECRET = "TOP-SECRET-OUTSIDE-THE-CHECKOUT"


@pytest.fixture(params=["claude"])
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


class ScriptedSpecialist(StandIn):
    """The model of a specialist: one step per tool result already in the conversation."""

    def __init__(self, steps: list[ToolCall]) -> None:
        super().__init__(choose=lambda _names: None, final_text="Answered.")
        self.steps = steps

    def _answer(self, path: str, body: Any) -> tuple[int, str, bytes]:
        if not isinstance(body, dict) or "Read" not in tool_names(body):
            return super()._answer(path, body)  # a side request (a title…): plain text
        done = json.dumps(body.get("messages")).count('"tool_result"')
        if done >= len(self.steps):
            return super()._answer(path, body)
        self._record("POST", path, body, f"step-{done}")
        document, stream = _anthropic(body, self.steps[done], "")
        # Each step's call gets its own id: Claude Code pairs results with calls by id.
        own = f"step_{done}"
        if document is not None:
            payload = json.dumps(document).replace("call_am_conformance_1", own).encode()
            return 200, "application/json", payload
        return 200, "text/event-stream", stream.replace(b"call_am_conformance_1", own.encode())


def _results(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(block)
    return found


def test_a_specialist_runs_on_claude_code_read_only_and_its_answer_is_admitted(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, _ = first_run(tmp_path)
    checkout = (folder / "checkout").resolve()
    hook_ran, planted = tmp_path / "hook-ran", tmp_path / "planted-by-bash"
    settings = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": f"touch {hook_ran}"}]}]}}  # fmt: skip
    (checkout / ".claude").mkdir()
    (checkout / ".claude" / "settings.json").write_text(json.dumps(settings))
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    steps = [
        ToolCall("Read", {"file_path": str(checkout / READ_TARGET)}),
        ToolCall("Grep", {"pattern": "name", "path": str(checkout), "output_mode": "content"}),
        ToolCall("Read", {"file_path": str(secret)}),
        ToolCall("Grep", {"pattern": "TOP", "path": str(tmp_path), "output_mode": "content"}),
        ToolCall("Glob", {"pattern": "*.txt", "path": str(tmp_path)}),
        ToolCall("Bash", {"command": f"touch {planted}"}),
        ToolCall("Write", {"file_path": str(planted), "content": "x"}),
        ToolCall("StructuredOutput", ANSWER),
    ]
    home = tmp_path / "home"
    home.mkdir()
    with ScriptedSpecialist(steps) as model:
        result = run_on(harness, binary, folder, home, model.url, monkeypatch,
                        model="claude-sonnet-4-5")  # fmt: skip
        requests = list(model.requests)
    assert result.exit_code == 0, result.stdout + result.stderr
    trial = json.loads(result.stdout)
    assert trial["complete"] is True
    assert trial["error"] is None
    assert trial["status"] == "accepted"
    assert trial["answer"] == ANSWER
    assert (trial["provider"], trial["lane"]) == ("anthropic", "claude-code")
    assert trial["tool_calls"] == 7  # the structured output is the answer, not a call
    assert trial["turns"] == 1
    assert trial["input_tokens"] > 0
    assert trial["output_tokens"] > 0

    stepped = {request.reply: request for request in requests if request.reply.startswith("step")}
    assert set(stepped) == {f"step-{number}" for number in range(8)}
    assert sorted(tool_names(stepped["step-0"].body)) == [
        "Glob",
        "Grep",
        "Read",
        "StructuredOutput",
    ]
    read, grep, read_out, grep_out, glob_out, bash, write = _results(stepped["step-7"].body)
    assert not read.get("is_error")
    assert 'name = \\"app\\"' in json.dumps(read["content"])  # the checkout's pyproject.toml
    assert not grep.get("is_error")
    assert "app" in json.dumps(grep["content"])
    # Outside the checkout and the evidence folder, Claude Code's own permission rules refuse.
    for refused in (read_out, grep_out, glob_out):
        assert refused.get("is_error") is True, refused
    assert all(SECRET not in json.dumps(request.body) for request in requests)
    for refused in (bash, write):
        assert refused.get("is_error") is True
        assert "No such tool available" in json.dumps(refused["content"])
    assert not planted.exists()
    assert not hook_ran.exists(), "a project hook ran inside the specialist's session"
    system = stepped["step-0"].body.get("system")
    assert "graph_discovery" in json.dumps(system)
    first_user = json.dumps(stepped["step-0"].body["messages"][0])
    assert "[active-memory specialist session: never reviewed by learning]" in first_user


class SilentModel(StandIn):
    """A model that never answers a specialist's request (a hung server): one that offers the
    harness's read tool."""

    def __init__(self, read_tool: str = "Read") -> None:
        super().__init__(choose=lambda _names: None)
        self.read_tool = read_tool

    def _answer(self, path: str, body: Any) -> tuple[int, str, bytes]:
        if isinstance(body, dict) and self.read_tool in tool_names(body):
            self._record("POST", path, body, "held")
            time.sleep(60)
        return super()._answer(path, body)


def _processes_with(variable: str, value: str) -> list[int]:
    """Live processes whose environment holds ``variable=value``."""
    wanted = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().split(") ", 1)[1][0]
                if state != "Z":
                    found.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def _left_behind(home: Path, within: float = 5.0) -> list[int]:
    """The processes whose HOME is ``home`` still alive after waiting up to ``within`` seconds
    for them to end."""
    deadline = time.monotonic() + within
    while _processes_with("HOME", str(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _processes_with("HOME", str(home))


# The first deadline each CLI is given: about twice the seconds it took, on a 2-core machine at
# load 5, from `specialist run` to its first model request (claude 2.4, codex 1.0, copilot 2.8,
# pi 4.8), so a session reaches its model and hangs there, then is ended, with little waiting.
FIRST_DEADLINE_S = {"claude": 5, "codex": 3, "copilot": 6, "pi": 10}
# A session that ended before it reached its model (a loaded machine) runs again with a deadline
# this many times longer: the deadline must end a session hung on its model, not one starting.
LONGER = 3
# How long after its deadline a session may take to end: the kill and the run's own set-up.
ENDS_WITHIN_S = 22


def _ends_at_the_deadline_hung_on_its_model(
    harness: Harness, binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    read_tool: str, model: str,
) -> None:  # fmt: skip
    """A session whose model never answers, given a deadline: it ends timed out at about the
    deadline with no process of it left, and it had reached its model when it did."""
    first = FIRST_DEADLINE_S[harness.name]
    for seconds in (first, first * LONGER):
        root = tmp_path / f"deadline-{seconds}"
        folder, _ = first_run(root)
        home = root / "home"
        home.mkdir()
        with SilentModel(read_tool) as silent:
            started = time.monotonic()
            result = run_on(harness, binary, folder, home, silent.url, monkeypatch,
                            "--timeout-ms", str(seconds * 1000), model=model)  # fmt: skip
            took = time.monotonic() - started
            held = silent.replies("held")
        # Reached or not, the deadline ended the session and left nothing of it.
        assert result.exit_code == 1, result.stdout + result.stderr
        assert json.loads(result.stdout)["status"] == "timed_out"
        assert took < seconds + ENDS_WITHIN_S
        assert _left_behind(home) == []
        if held:
            return
    pytest.fail(f"{harness.name} never asked the model within {first * LONGER} s")


def test_the_deadline_ends_the_claude_session_and_leaves_no_process(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _ends_at_the_deadline_hung_on_its_model(
        harness, binary, tmp_path, monkeypatch, "Read", "claude-sonnet-4-5"
    )


# --- Codex, Copilot CLI and pi: OpenAI wires ---------------------------------------------------


def _scripted_session(
    harness: Harness, binary: Path, folder: Path, steps: list[ToolCall],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[dict[str, Any], dict[str, Recorded]]:  # fmt: skip
    """Run graph discovery on ``harness``'s lane with the scripted model: the trial printed
    and the model's requests by step."""
    home = folder.parent / "home"
    home.mkdir()
    with ScriptedOpenAISpecialist(harness.name, steps) as model:
        result = run_on(harness, binary, folder, home, model.url, monkeypatch)
        requests = list(model.requests)
    assert result.exit_code == 0, result.stdout + result.stderr
    trial = json.loads(result.stdout)
    assert trial["error"] is None
    assert trial["status"] == "accepted"
    assert trial["answer"] == ANSWER
    assert trial["lane"] == harness_row(harness.name).lane
    assert trial["turns"] == 1
    assert trial["input_tokens"] > 0
    assert trial["output_tokens"] > 0
    stepped = {request.reply: request for request in requests if request.reply.startswith("step")}
    assert set(stepped) == {f"step-{number}" for number in range(len(steps) + 1)}
    body = json.dumps(stepped["step-0"].body)
    assert "graph_discovery" in body
    assert "[active-memory specialist session: never reviewed by learning]" in body
    return trial, stepped


def _plant_hook(checkout: Path, relative: str, document: Mapping[str, Any]) -> None:
    (checkout / relative).parent.mkdir(parents=True, exist_ok=True)
    (checkout / relative).write_text(json.dumps(document))


@pytest.mark.parametrize("harness", ["codex"], indirect=True)
def test_a_specialist_runs_on_codex_in_its_read_only_sandbox_and_its_answer_is_admitted(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, _ = first_run(tmp_path)
    checkout = (folder / "checkout").resolve()
    hook_ran, planted = tmp_path / "hook-ran", checkout / "planted-by-shell"
    _plant_hook(checkout, ".codex/hooks.json", {"hooks": {"PreToolUse": [{"matcher": "*",
                "hooks": [{"type": "command", "command": f"touch {hook_ran}"}]}]}})  # fmt: skip
    escalated = {"cmd": f"echo x > {planted}", "workdir": str(checkout),
                 "sandbox_permissions": "require_escalated"}  # fmt: skip
    steps = [
        ToolCall("exec_command", {"cmd": f"cat {READ_TARGET}", "workdir": str(checkout)}),
        ToolCall("exec_command", {"cmd": f"touch {planted}", "workdir": str(checkout)}),
        ToolCall("exec_command", escalated),
    ]
    trial, stepped = _scripted_session(harness, binary, folder, steps, monkeypatch)
    assert trial["provider"] == "openai"
    assert trial["tool_calls"] >= 1  # the read; Codex does not report the refused commands
    offered = set(tool_names(stepped["step-0"].body))
    assert not offered & {"web_search", "apply_patch", "multi_agent_v1", "create_goal"}
    outputs = openai_results(stepped["step-3"].body)
    assert 'name = \\"app\\"' in outputs["call_step_0"]  # the checkout's pyproject.toml
    assert "Read-only file system" in outputs["call_step_1"]
    assert "call_step_2" in outputs  # leaving the sandbox was refused, not asked
    assert not planted.exists()
    # Codex runs a hook only once the user trusted it (hooks/codex_trust.py) and this one is not
    # trusted: this guards against the lane bypassing that trust, while `--disable hooks`, which
    # keeps out the hooks a user did trust, is only seen accepted here (the run succeeds).
    assert not hook_ran.exists(), "a project hook ran inside the specialist's session"
    assert stepped["step-0"].body["text"]["format"]["type"] == "json_schema"


@pytest.mark.parametrize("harness", ["copilot"], indirect=True)
def test_a_specialist_runs_on_copilot_with_read_tools_only_and_its_answer_is_admitted(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, _ = first_run(tmp_path)
    checkout = (folder / "checkout").resolve()
    hook_ran, planted = tmp_path / "hook-ran", checkout / "planted"
    # The conformance kit sets COPILOT_ALLOW_ALL=true, which would load this hook: not passed on.
    _plant_hook(checkout, ".github/hooks/project.json", {"version": 1, "hooks": {
        "preToolUse": [{"type": "command", "bash": f"touch {hook_ran}"}]}})  # fmt: skip
    steps = [
        ToolCall("view", {"path": str(checkout / READ_TARGET)}),
        ToolCall("bash", {"command": f"touch {planted}", "description": "plant"}),
        ToolCall("create", {"path": str(planted), "file_text": "x"}),
    ]
    trial, stepped = _scripted_session(harness, binary, folder, steps, monkeypatch)
    assert trial["tool_calls"] == 3
    assert sorted(tool_names(stepped["step-0"].body)) == ["glob", "grep", "view"]
    results = openai_results(stepped["step-3"].body)
    assert 'name = \\"app\\"' in results["call_step_0"]  # the checkout's pyproject.toml
    for refused in ("call_step_1", "call_step_2"):
        assert "does not exist" in results[refused]
    assert not planted.exists()
    assert not hook_ran.exists(), "the checkout's hook ran inside the specialist's session"


@pytest.mark.parametrize("harness", ["pi"], indirect=True)
def test_a_specialist_runs_on_pi_with_read_tools_only_and_its_answer_is_admitted(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, _ = first_run(tmp_path)
    checkout = (folder / "checkout").resolve()
    hook_ran, planted = tmp_path / "hook-ran", checkout / "planted"
    # active-memory's pi integration is an extension like this one: --no-extensions keeps both out.
    touch = f"writeFileSync({json.dumps(str(hook_ran))}, 'x');"
    extension = (
        f'import {{ writeFileSync }} from "node:fs";\nexport default function () {{ {touch} }}\n'
    )
    (checkout / ".pi" / "extensions").mkdir(parents=True)
    (checkout / ".pi" / "extensions" / "planted.ts").write_text(extension)
    steps = [
        ToolCall("read", {"path": READ_TARGET}),
        ToolCall("bash", {"command": f"touch {planted}"}),
        ToolCall("write", {"path": str(planted), "content": "x"}),
    ]
    trial, stepped = _scripted_session(harness, binary, folder, steps, monkeypatch)
    assert trial["tool_calls"] == 3
    assert sorted(tool_names(stepped["step-0"].body)) == ["find", "grep", "ls", "read"]
    results = openai_results(stepped["step-3"].body)
    assert 'name = \\"app\\"' in results["call_step_0"]  # the checkout's pyproject.toml
    assert "Tool bash not found" in results["call_step_1"]
    assert "Tool write not found" in results["call_step_2"]
    assert not planted.exists()
    assert not hook_ran.exists(), "the checkout's extension ran inside the specialist's session"


@pytest.mark.parametrize("harness", ["codex", "copilot", "pi"], indirect=True)
def test_the_deadline_ends_the_harness_session_and_leaves_no_process(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _ends_at_the_deadline_hung_on_its_model(
        harness, binary, tmp_path, monkeypatch, READ_TOOLS[harness.name], "stand-in"
    )


@pytest.mark.parametrize("harness", ["codex", "copilot", "pi"], indirect=True)
def test_an_invalid_answer_is_repaired_in_the_same_harness_session(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder, _ = first_run(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    with ScriptedOpenAISpecialist(harness.name, [], invalid_first=True) as model:
        result = run_on(harness, binary, folder, home, model.url, monkeypatch)
        repairs = model.replies("repair")
    assert result.exit_code == 0, result.stdout + result.stderr
    trial = json.loads(result.stdout)
    assert (trial["status"], trial["answer"], trial["repaired"]) == ("accepted", ANSWER, True)
    assert repairs, f"{harness.name} never sent the repair message"
    # The resumed session carries the first turn: the marked first message is still there.
    assert "[active-memory specialist session: never reviewed by learning]" in repairs[0].text
