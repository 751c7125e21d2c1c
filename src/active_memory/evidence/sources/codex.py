"""A Codex CLI rollout as a run record.

Input: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` in either form Codex has written:

* current: every line ``{timestamp, type, payload}``; ``session_meta`` (id, cwd, cli_version,
  model_provider, git), ``turn_context`` (model, cwd), ``response_item`` (message,
  function_call, function_call_output, custom_tool_call, local_shell_call, reasoning…),
  ``event_msg`` (user_message, agent_message, turn_aborted, error, task_complete…),
  ``compacted``;
* legacy (2025): a bare first line ``{id, timestamp, instructions, git}``, then bare response
  items and ``{"record_type": "state"}`` lines, with no timestamps and no model.

One execution (``main``) per rollout. Tool calls become receipts: the tool name and the paths in
its arguments (``apply_patch`` file headers, shell argv operands, path keys); a call the user
declined (``exec command rejected by user``, ``patch rejected by user``) stays in the transcript
as ``[rejected by the user]`` but is withdrawn from the receipts. Reasoning is not read; messages,
tool calls and their outputs become transcript records.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from active_memory.evidence.sources.converter import SessionConverter, block_marker, content_text
from active_memory.evidence.sources.lanes import REJECTED_REASON, BoundedMap, Lane
from active_memory.evidence.sources.lines import parse_line
from active_memory.evidence.sources.peek import Look, Scan, dig, text_of
from active_memory.evidence.sources.timestamps import iso_ms
from active_memory.evidence.sources.tool_paths import argument_paths, patch_paths, shell_paths
from active_memory.harnesses import harness_row
from active_memory.models.runs import RunRecord, canonical_json

__all__ = ["LOADER", "NODE_ID", "PEEK", "load_codex_rollout"]

_ROW = harness_row("codex")
NODE_ID = _ROW.lane
# A cwd as the legacy environment-context message writes it.
_CWD = re.compile(r"<cwd>([^<\n]{1,4096})</cwd>")
# The response items a legacy rollout writes as bare lines; any other bare line is no Codex record.
_BARE_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output",
                         "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                         "web_search_call"})  # fmt: skip
_TAGGED = ("<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md")
# What Codex answers the model when the user declines a command or a patch: the call did nothing.
_REJECTIONS = frozenset({"exec command rejected by user", "patch rejected by user"})


def _block(block: Any) -> str | None:
    """What a content block leaves: its text, or ``[type]`` when it has none; a bare string
    block is its own text."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return None
    text = block.get("text")
    return text if isinstance(text, str) else block_marker(block)


def _output_text(output: Any) -> tuple[str, bool]:
    """A tool output's text and whether it reports a failure."""
    if isinstance(output, dict):
        failed = output.get("success") is False
        return content_text(output.get("content", output.get("output", "")), _block), failed
    if isinstance(output, str):
        # Older rollouts wrap shell output as JSON text: {"output": "...", "metadata": {...}}.
        if output.startswith('{"output"'):
            value, _ = parse_line(output)
            if value is not None and isinstance(value.get("output"), str):
                code = (value.get("metadata") or {}).get("exit_code")
                return value["output"], isinstance(code, int) and code != 0
        return output, False
    return content_text(output, _block), False


class _Converter(SessionConverter):
    def __init__(self, workdir: Path) -> None:
        super().__init__(_ROW, workdir)
        self.tool_names = BoundedMap(1024)
        self.tool_seqs = BoundedMap(1024)  # call id -> receipt seq, to withdraw a declined call
        self.model: str | None = None
        self.typed_request = False

    def entry(self, value: dict[str, Any], *, first: bool) -> None:
        payload = value.get("payload")
        kind = value.get("type")
        when = iso_ms(value.get("timestamp"))
        if isinstance(payload, dict) and isinstance(kind, str):
            if kind == "session_meta":
                self.meta(payload)
            elif kind == "turn_context":
                self.model = text_of(payload.get("model")) or self.model
                self.facts.cwd = self.facts.cwd or text_of(payload.get("cwd"))
            elif kind == "response_item":
                self.item(payload, when)
            elif kind == "event_msg":
                self.event(payload, when)
            elif kind == "compacted":
                self.writer.write(self.main, "system", "[context compacted]", when)
            return
        if first and "record_type" not in value and "type" not in value:
            self.meta(value)  # the legacy form's bare first line
        elif isinstance(kind, str) and kind in _BARE_ITEMS:  # a list or dict type is not one
            self.item(value, iso_ms(value.get("timestamp")))
        elif "record_type" not in value:
            self.cuts.add("lines", "line not read: not a Codex rollout record")

    def meta(self, payload: dict[str, Any]) -> None:
        facts = self.facts
        facts.session_id = facts.session_id or text_of(payload.get("id"))
        facts.cwd = facts.cwd or text_of(payload.get("cwd"))
        facts.version = text_of(payload.get("cli_version")) or facts.version
        provider = text_of(payload.get("model_provider"))
        if provider:
            facts.provider = "anthropic" if "anthropic" in provider else "openai"
        git = payload.get("git")
        if isinstance(git, dict):
            facts.extra["git_branch"] = text_of(git.get("branch"))
            facts.extra["git_commit"] = text_of(git.get("commit_hash"))
        self.main.saw(iso_ms(payload.get("timestamp")))

    def item(self, item: dict[str, Any], when: int | None) -> None:
        lane = self.main
        lane.saw(when)
        kind = item.get("type")
        if kind == "message":
            self.message(lane, item, when)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self.call(lane, item, when)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            call = str(item.get("call_id"))
            tool = self.tool_names.get(call)
            text, failed = _output_text(item.get("output"))
            if text.strip() in _REJECTIONS:
                self.reject(call)
                self.writer.write(lane, "tool", "[rejected by the user]", when, tool)
                return
            self.writer.write(lane, "tool", ("[error] " if failed else "") + text, when, tool)
        elif kind == "web_search_call":
            action = item.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            seq = self.receipts.add(lane.id, when, "web_search", [])
            self.writer.write(lane, "assistant", f"[web search: {str(query)[:512]}]", when,
                              "web_search", receipt=seq)  # fmt: skip
        elif kind not in ("reasoning", None):
            self.writer.write(lane, "system", f"[{str(kind)[:64]}]", when)

    def message(self, lane: Lane, item: dict[str, Any], when: int | None) -> None:
        role = item.get("role")
        text = content_text(item.get("content"), _block)
        if role == "assistant":
            self.writer.write(lane, "assistant", text, when)
            lane.used(self.model)
            lane.finish(text)
            return
        if role == "user":
            self.writer.write(lane, "user", text, when)
            found = _CWD.search(text)
            if found and not self.facts.cwd:
                self.facts.cwd = found.group(1).strip()
            stripped = text.lstrip()
            if not self.typed_request and not stripped.startswith(_TAGGED) and stripped:
                self.facts.initial_input = self.facts.initial_input or text
            return
        # developer and system messages: the harness's own instructions
        self.writer.write(lane, "system", text, when)

    def call(self, lane: Lane, item: dict[str, Any], when: int | None) -> None:
        name = str(item.get("name") or item.get("type"))[:128]
        call = str(item.get("call_id") or item.get("id"))
        self.tool_names.remember(call, name)
        cwd = self.facts.cwd
        if item.get("type") == "local_shell_call":
            action = item.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            text, paths = canonical_json(action), shell_paths(command, cwd)
        elif item.get("type") == "custom_tool_call":
            text = str(item.get("input", ""))
            paths = patch_paths(text, cwd)
        else:
            text = str(item.get("arguments", ""))
            arguments, _ = parse_line(text) if text.startswith("{") else (None, None)
            paths = argument_paths(arguments, cwd) if arguments else patch_paths(text, cwd)
        seq = self.receipts.add(lane.id, when, name, paths)
        self.tool_seqs.remember(call, str(seq))
        self.writer.write(lane, "assistant", text, when, tool=name, receipt=seq)
        lane.used(self.model)

    def reject(self, call: str) -> None:
        """The user declined the call: it stays in the transcript, but it is no receipt."""
        seq = self.tool_seqs.pop(call, None)
        if seq is not None:
            self.receipts.withdraw(int(seq))
            self.cuts.add("receipts", REJECTED_REASON)

    def event(self, payload: dict[str, Any], when: int | None) -> None:
        kind = payload.get("type")
        lane = self.main
        if kind == "user_message":
            message = payload.get("message")
            if isinstance(message, str) and message.strip() and not self.typed_request:
                # What the user typed, without the harness's context around it.
                self.facts.initial_input, self.typed_request = message, True
            lane.interrupted = False
        elif kind == "turn_aborted":
            lane.interrupted = True
        elif kind in ("error", "stream_error"):
            lane.failed = True
        elif kind == "task_complete":
            lane.failed = lane.interrupted = False


def load_codex_rollout(path: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> RunRecord:
    """Convert the rollout at ``path`` into a native record folder ``workdir`` and load it."""
    rollout = Path(path)
    converter = _Converter(Path(workdir))
    converter.read_session(rollout)
    if converter.model is None:
        converter.facts.extra["model_note"] = "the rollout names no model (legacy form)"
    return converter.record(
        rollout, session_id=rollout.stem, empty="has no messages or tool calls of a Codex session"
    )


# What the harness table finds here (evidence/sources/__init__.py).
LOADER = load_codex_rollout


def _environment_cwd(item: Any) -> str | None:
    if not isinstance(item, dict) or item.get("role") != "user":
        return None
    for block in item.get("content") or ():
        text = block.get("text") if isinstance(block, dict) else None
        found = _CWD.search(text) if isinstance(text, str) else None
        if found:
            return found.group(1).strip()
    return None


def _peek(value: dict[str, Any], scan: Scan) -> Look:
    """The inventory's look at one line, of a current rollout or a legacy one."""
    kind = value.get("type")
    payload = value.get("payload") if isinstance(value.get("payload"), dict) else value
    if kind == "session_meta" or "instructions" in value or "git" in value:
        scan.session_id = scan.session_id or text_of(dig(payload, "id"))
    scan.cwd = scan.cwd or text_of(dig(payload, "cwd")) or _environment_cwd(payload)
    return Look(dig(payload, "model") if kind == "turn_context" else None)


PEEK = _peek
