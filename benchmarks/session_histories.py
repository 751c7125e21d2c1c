"""Generated harness sessions for the evidence benchmark: real field names, synthetic content.

Each case streams one session (and its subagent files) to disk until the files total the
requested size; lines are built from a small pool of pre-encoded tool outputs, so generating a
gigabyte costs seconds, never memory.

* ``claude-tools``: one Claude Code conversation of Read/Edit/Bash/Grep calls and results;
* ``claude-subagents``: a main conversation launching 300 Task subagents, one file each;
* ``claude-sidechains``: older Claude Code's inline subagents, 20 chains of short sidechain
  records in the main file (the record count grows with the size; the test suite checks
  flatness at 40x a small file, this case at any size);
* ``codex-tools``: a current-form Codex rollout of shell calls and apply_patch edits;
* ``pi-tools``: a pi v3 session of read/edit/bash tool calls and results;
* ``copilot-tools``: a Copilot CLI events.jsonl of view calls and results;
* ``copilot-subagents``: the same, run by 300 subagents one after another;
* ``codex-children``: a parent rollout and 300 child rollouts it spawned (each child's
  ``session_meta`` names the parent thread in ``source.subagent.thread_spawn``, as spawned
  sub-agents do), every file in the sessions folder;
* ``pi-children``: a parent pi session and 300 sub-sessions (each header names the parent in
  ``parentSession``) in one project folder.

The Codex and pi sources read one session file each and do not join children to their parent:
the children cases measure what they support at that scale, the inventory of all 301 sessions
and the review of each, one after another, as memory init goes through them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

__all__ = ["CHILD_ROOTS", "SESSION_CASES", "SUBAGENTS", "generate_session"]

SESSION_CASES = (
    "claude-tools",
    "claude-subagents",
    "claude-sidechains",
    "codex-tools",
    "pi-tools",
    "copilot-tools",
    "copilot-subagents",
    "codex-children",
    "pi-children",
)
CHILD_ROOTS = {"codex-children": ("codex", "sessions"), "pi-children": ("pi", "")}
SUBAGENTS = 300
CWD = "/home/dev/bench"
_TEXT = "\x00TEXT\x00"  # stands for a pre-encoded tool output in a line's JSON
_ENCODED = json.dumps(_TEXT)


def _texts(rng: random.Random) -> list[str]:
    """Tool outputs of realistic sizes, one of 200 KB, each JSON-encoded once."""
    texts = []
    for index in range(48):
        size = 200_000 if index == 47 else rng.choice([200, 800, 2000, 4000, 8000, 16000])
        line = f"line {index}: def handler(request): return respond(request.body)  # "
        texts.append(json.dumps((line * (size // len(line) + 1))[:size]))
    return texts


def _stamp(n: int) -> str:
    seconds = n // 1000
    return (f"2025-11-{1 + seconds // 86400 % 28:02d}T{seconds // 3600 % 24:02d}:"
            f"{seconds // 60 % 60:02d}:{seconds % 60:02d}.{n % 1000:03d}Z")  # fmt: skip


class _Stream:
    """Lines written in batches until the file reaches its share of the bytes."""

    def __init__(self, path: Path, target: int, texts: list[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.out = path.open("w", encoding="utf-8")
        self.target, self.written, self.texts = target, 0, texts
        self.batch: list[str] = []
        # Seeded by the file too: equal shares must not all draw the same (200 KB) first output.
        self.rng = random.Random(f"{path.name}-{target}")

    def put(self, value: dict[str, Any]) -> None:
        line = json.dumps(value)
        if _ENCODED in line:
            line = line.replace(_ENCODED, self.rng.choice(self.texts))
        self.batch.append(line + "\n")
        self.written += len(line) + 1
        if len(self.batch) >= 512:
            self.out.write("".join(self.batch))
            self.batch.clear()

    @property
    def full(self) -> bool:
        return self.written >= self.target

    def close(self) -> None:
        self.out.write("".join(self.batch))
        self.out.close()


def _claude_entry(kind: str, n: int, content: Any, agent: str | None, **extra: Any) -> Any:
    message: dict[str, Any] = {"role": "user" if kind == "user" else "assistant",
                               "content": content}  # fmt: skip
    if kind == "assistant":
        message["model"] = "claude-sonnet-4-5"
    return {"cwd": CWD, "sessionId": "bench-session", "version": "2.0.31",
            "isSidechain": agent is not None, **({"agentId": agent} if agent else {}),
            "type": kind, "uuid": f"{kind[0]}{n}", "timestamp": _stamp(n * 1000),
            "message": message, **extra}  # fmt: skip


def _claude_loop(out: _Stream, agent: str | None) -> None:
    out.put(_claude_entry("user", 0, "Refactor the handlers.", agent))
    n = 0
    while not out.full:
        n += 1
        tool = ("Read", "Edit", "Bash", "Grep")[n % 4]
        arguments = {"command": "pytest -q tests"} if tool == "Bash" else {
            "file_path": f"{CWD}/src/m{n % 97}.py"}  # fmt: skip
        use = {"type": "tool_use", "id": f"t{n}", "name": tool, "input": arguments}
        out.put(_claude_entry("assistant", n, [use], agent))
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": _TEXT}
        out.put(_claude_entry("user", n, [result], agent))
        if n % 10 == 0:
            out.put(_claude_entry("assistant", n, [{"type": "text", "text": f"Step {n}."}], agent))


def _claude(folder: Path, total: int, subagents: int, texts: list[str]) -> Path:
    main = folder / "bench-session.jsonl"
    if not subagents:
        out = _Stream(main, total, texts)
        _claude_loop(out, None)
        out.close()
        return main
    out = _Stream(main, 0, texts)
    out.put(_claude_entry("user", 0, "Survey every package.", None))
    for index in range(subagents):
        agent = f"a{index:05x}"
        use = {"type": "tool_use", "id": f"task{index}", "name": "Task",
               "input": {"prompt": f"survey {index}"}}  # fmt: skip
        out.put(_claude_entry("assistant", index + 1, [use], None))
        result = {"type": "tool_result", "tool_use_id": f"task{index}", "content": "surveyed"}
        out.put(_claude_entry("user", index + 1, [result], None,
                              toolUseResult={"agentId": agent}))  # fmt: skip
        sub = _Stream(main.with_suffix("") / "subagents" / f"agent-{agent}.jsonl",
                      total // subagents, texts)  # fmt: skip
        _claude_loop(sub, agent)
        sub.close()
    out.close()
    return main


def _claude_sidechains(folder: Path, total: int, texts: list[str], chains: int = 20) -> Path:
    """Older Claude Code's inline subagents: sidechain records in the main file, each chain
    linked by ``parentUuid``, the records spread evenly over the chains (text only, so the
    record count, not the output size, grows with ``total``)."""
    main = folder / "bench-session.jsonl"
    out = _Stream(main, total, texts)
    out.put(_claude_entry("user", 0, "Ask the helpers.", None))
    n, parents = 0, [""] * chains
    while not out.full:
        n += 1
        chain = n % chains
        kind = "user" if n // chains % 2 == 0 else "assistant"
        content = f"step {n}" if kind == "user" else [{"type": "text", "text": f"step {n}"}]
        extra = {"parentUuid": parents[chain] or None, "uuid": f"c{chain}-{n}"}
        out.put({**_claude_entry(kind, n, content, None, **extra), "isSidechain": True})
        parents[chain] = f"c{chain}-{n}"
    out.close()
    return main


def _codex(
    folder: Path, total: int, texts: list[str], name: str = "bench", parent: str | None = None
) -> Path:
    path = folder / "sessions" / "2025" / "11" / "01" / f"rollout-{name}.jsonl"
    out = _Stream(path, total, texts)

    def put(kind: str, n: int, payload: dict[str, Any]) -> None:
        out.put({"timestamp": _stamp(n * 1000), "type": kind, "payload": payload})

    meta: dict[str, Any] = {"id": name, "cwd": CWD, "cli_version": "0.58.0",
                            "model_provider": "openai"}  # fmt: skip
    if parent is not None:
        meta["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}
    put("session_meta", 0, meta)
    put("turn_context", 0, {"cwd": CWD, "model": "gpt-5-codex"})
    put("event_msg", 0, {"type": "user_message", "message": "Refactor the handlers."})
    n = 0
    while not out.full:
        n += 1
        if n % 5:
            command = {"command": ["bash", "-lc", f"sed -n '1,200p' src/m{n % 97}.py"]}
            put(
                "response_item",
                n,
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps(command),
                    "call_id": f"c{n}",
                },
            )
            put("response_item", n, {"type": "function_call_output", "call_id": f"c{n}",
                                     "output": _TEXT})  # fmt: skip
            continue
        patch = f"*** Begin Patch\n*** Update File: src/m{n % 97}.py\n@@\n-old\n+new\n*** End Patch"
        put("response_item", n, {"type": "custom_tool_call", "name": "apply_patch",
                                 "input": patch, "call_id": f"c{n}"})  # fmt: skip
        put("response_item", n, {"type": "custom_tool_call_output", "call_id": f"c{n}",
                                 "output": "Success."})  # fmt: skip
        put(
            "response_item",
            n,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"Step {n}."}],
            },
        )
    out.close()
    return path


def _pi(
    folder: Path, total: int, texts: list[str], name: str = "bench", parent: Path | None = None
) -> Path:
    path = folder / "--home-dev-bench--" / f"2025-11-01T00-00-00-000Z_{name}.jsonl"
    out = _Stream(path, total, texts)
    header: dict[str, Any] = {"type": "session", "version": 3, "id": name,
                              "timestamp": _stamp(0), "cwd": CWD}  # fmt: skip
    if parent is not None:
        header["parentSession"] = str(parent)
    out.put(header)
    out.put({"type": "model_change", "id": "m0", "parentId": None, "timestamp": _stamp(0),
             "provider": "anthropic", "modelId": "claude-sonnet-4-5"})  # fmt: skip
    user = {"role": "user", "content": [{"type": "text", "text": "Refactor the handlers."}]}
    out.put({"type": "message", "id": "r0", "parentId": "m0", "timestamp": _stamp(0),
             "message": user})  # fmt: skip
    n = 0
    while not out.full:
        n += 1
        tool = ("read", "edit", "bash")[n % 3]
        arguments = {"command": "pytest -q tests/test_m.py"} if tool == "bash" else {
            "path": f"src/m{n % 97}.py"}  # fmt: skip
        call = {"type": "toolCall", "id": f"t{n}", "name": tool, "arguments": arguments}
        out.put({"type": "message", "id": f"a{n}", "parentId": f"r{n - 1}",
                 "timestamp": _stamp(n * 1000),
                 "message": {"role": "assistant", "content": [call], "provider": "anthropic",
                             "model": "claude-sonnet-4-5", "stopReason": "toolUse"}})  # fmt: skip
        result = {"role": "toolResult", "toolCallId": f"t{n}", "toolName": tool,
                  "content": [{"type": "text", "text": _TEXT}], "isError": False}  # fmt: skip
        out.put({"type": "message", "id": f"r{n}", "parentId": f"a{n}",
                 "timestamp": _stamp(n * 1000 + 500), "message": result})  # fmt: skip
    out.close()
    return path


def _copilot(folder: Path, total: int, subagents: int, texts: list[str]) -> Path:
    path = folder / "session-state" / "bench" / "events.jsonl"
    out = _Stream(path, total, texts)

    def put(kind: str, n: int, data: dict[str, Any]) -> None:
        out.put({"type": kind, "id": f"e{n}-{kind}", "timestamp": _stamp(n * 1000),
                 "parentId": None, "data": data})  # fmt: skip

    put("session.start", 0, {"sessionId": "bench", "copilotVersion": "0.0.365",
                             "context": {"cwd": CWD}})  # fmt: skip
    put("session.model_change", 0, {"newModel": "claude-sonnet-4.5"})
    put("user.message", 0, {"content": "Refactor the handlers."})
    n, agent, share = 0, -1, max(1, total // max(1, subagents))
    while not out.full:
        n += 1
        parent: dict[str, str] = {}
        if subagents and agent < subagents - 1 and out.written >= (agent + 1) * share:
            agent += 1
            put("subagent.started", n, {"toolCallId": f"task{agent}", "agentName": "explore"})
        if agent >= 0:
            parent = {"parentToolCallId": f"task{agent}"}
        put("tool.execution_start", n, {"toolCallId": f"c{n}", "toolName": "view",
                                        "arguments": {"path": f"{CWD}/src/m{n % 97}.py"},
                                        **parent})  # fmt: skip
        put("tool.execution_complete", n, {"toolCallId": f"c{n}", "success": True,
                                           "result": {"content": _TEXT}, **parent})  # fmt: skip
        if n % 10 == 0:
            put("assistant.message", n, {"messageId": f"m{n}", "content": f"Step {n}.", **parent})
    out.close()
    return path


def _children(case: str, folder: Path, total: int, texts: list[str]) -> Path:
    share = total // (SUBAGENTS + 1)
    if case == "codex-children":
        parent = _codex(folder, share, texts)
        for index in range(SUBAGENTS):
            _codex(folder, share, texts, f"child{index:04d}", "bench")
    else:
        parent = _pi(folder, share, texts)
        for index in range(SUBAGENTS):
            _pi(folder, share, texts, f"child{index:04d}", parent)
    return parent


def generate_session(case: str, folder: Path, total: int) -> Path:
    """The session file of ``case`` (for a children case, the parent's), its files totalling
    about ``total`` bytes."""
    texts = _texts(random.Random(total))
    if case in CHILD_ROOTS:
        return _children(case, folder, total, texts)
    subagents = SUBAGENTS if case.endswith("subagents") else 0
    if case == "claude-sidechains":
        return _claude_sidechains(folder, total, texts)
    if case.startswith("claude"):
        return _claude(folder, total, subagents, texts)
    if case == "codex-tools":
        return _codex(folder, total, texts)
    if case == "pi-tools":
        return _pi(folder, total, texts)
    if case.startswith("copilot"):
        return _copilot(folder, total, subagents, texts)
    raise ValueError(f"unknown case {case!r}; choose one of {SESSION_CASES}")
