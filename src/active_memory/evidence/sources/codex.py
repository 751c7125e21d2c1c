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

from active_memory.errors import RunRecordError
from active_memory.evidence.sources.assemble import SessionFacts, assemble_record
from active_memory.evidence.sources.lanes import (
    REJECTED_REASON,
    BoundedMap,
    Lane,
    ReceiptRing,
    SessionWriter,
    SourceCuts,
)
from active_memory.evidence.sources.lines import iter_lines, parse_line
from active_memory.evidence.sources.timestamps import iso_ms
from active_memory.evidence.sources.tool_paths import argument_paths, patch_paths, shell_paths
from active_memory.harnesses import harness_row
from active_memory.models.runs import RunRecord, canonical_json

__all__ = ["LOADER", "NODE_ID", "load_codex_rollout"]

_ROW = harness_row("codex")
NODE_ID = _ROW.lane
_CWD = re.compile(r"<cwd>([^<\n]{1,4096})</cwd>")
# The response items a legacy rollout writes as bare lines; any other bare line is no Codex record.
_BARE_ITEMS = frozenset({"message", "reasoning", "function_call", "function_call_output",
                         "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                         "web_search_call"})  # fmt: skip
_TAGGED = ("<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md")
# What Codex answers the model when the user declines a command or a patch: the call did nothing.
_REJECTIONS = frozenset({"exec command rejected by user", "patch rejected by user"})


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else canonical_json(content)
    parts = []
    for block in content:
        if isinstance(block, dict):
            kind = str(block.get("type") or "block")[:64]
            text = block.get("text")
            parts.append(text if isinstance(text, str) else f"[{kind}]")
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(parts)


def _output_text(output: Any) -> tuple[str, bool]:
    """A tool output's text and whether it reports a failure."""
    if isinstance(output, dict):
        failed = output.get("success") is False
        return _content_text(output.get("content", output.get("output", ""))), failed
    if isinstance(output, str):
        # Older rollouts wrap shell output as JSON text: {"output": "...", "metadata": {...}}.
        if output.startswith('{"output"'):
            value, _ = parse_line(output)
            if value is not None and isinstance(value.get("output"), str):
                code = (value.get("metadata") or {}).get("exit_code")
                return value["output"], isinstance(code, int) and code != 0
        return output, False
    return _content_text(output), False


class _Converter:
    def __init__(self, workdir: Path) -> None:
        self.writer = SessionWriter(workdir)
        self.receipts = ReceiptRing()
        self.cuts = SourceCuts()
        self.facts = SessionFacts.of(_ROW)
        self.tool_names = BoundedMap(1024)
        self.tool_seqs = BoundedMap(1024)  # call id -> receipt seq, to withdraw a declined call
        self.model: str | None = None
        self.typed_request = False

    @property
    def main(self) -> Lane:
        return self.writer.lane("main", self.facts.session_id or _ROW.name)

    def read(self, path: Path) -> None:
        for index, line in enumerate(iter_lines(path)):
            value = line.value
            if value is None:
                self.facts.lines_unreadable += 1
                self.cuts.add("lines", f"line not read: {line.problem}", size=line.size)
                continue
            try:
                self.line(value, first=index == 0)
            except RecursionError:
                self.facts.lines_unreadable += 1
                self.cuts.add("lines", "line not read: nested too deeply", size=line.size)

    def line(self, value: dict[str, Any], *, first: bool) -> None:
        payload = value.get("payload")
        kind = value.get("type")
        when = iso_ms(value.get("timestamp"))
        if isinstance(payload, dict) and isinstance(kind, str):
            if kind == "session_meta":
                self.meta(payload)
            elif kind == "turn_context":
                self.model = _short(payload.get("model")) or self.model
                self.facts.cwd = self.facts.cwd or _short(payload.get("cwd"))
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
        facts.session_id = facts.session_id or _short(payload.get("id"))
        facts.cwd = facts.cwd or _short(payload.get("cwd"))
        facts.version = _short(payload.get("cli_version")) or facts.version
        provider = _short(payload.get("model_provider"))
        if provider:
            facts.provider = "anthropic" if "anthropic" in provider else "openai"
        git = payload.get("git")
        if isinstance(git, dict):
            facts.extra["git_branch"] = _short(git.get("branch"))
            facts.extra["git_commit"] = _short(git.get("commit_hash"))
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
        text = _content_text(item.get("content"))
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


def _short(value: Any) -> str | None:
    return value[:4096] if isinstance(value, str) and value else None


def load_codex_rollout(path: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> RunRecord:
    """Convert the rollout at ``path`` into a native record folder ``workdir`` and load it."""
    rollout, target = Path(path), Path(workdir)
    converter = _Converter(target)
    try:
        converter.read(rollout)
    finally:
        converter.writer.close()
    main = converter.writer.lanes.get("main")
    if main is None or main.records == 0:
        raise RunRecordError("$", "has no messages or tool calls of a Codex session",
                             source=str(rollout))  # fmt: skip
    facts = converter.facts
    facts.session_id = facts.session_id or rollout.stem
    main.conversation = facts.session_id
    if converter.model is None:
        facts.extra["model_note"] = "the rollout names no model (legacy form)"
    return assemble_record(facts, converter.writer, converter.receipts, converter.cuts, target,
                           rollout)  # fmt: skip


# What the harness table finds here (evidence/sources/__init__.py).
LOADER = load_codex_rollout
