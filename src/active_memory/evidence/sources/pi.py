"""A pi coding agent session as a run record.

Input: ``~/.pi/agent/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl``, session format v3 (v1 and
v2 read the same way): a header ``{"type": "session", "version", "id", "timestamp", "cwd"}``,
then entries linked by ``id``/``parentId``: ``model_change`` (provider, modelId),
``thinking_level_change``, ``session_info``, ``compaction``, ``branch_summary`` and ``message``
entries whose ``message`` has a role: ``user``, ``assistant`` (content blocks text, thinking,
toolCall ``{id, name, arguments}``; model, provider, stopReason), ``toolResult`` (toolCallId,
toolName, content, isError) or ``bashExecution`` (a command the user ran).

One execution (``main``) per session; every branch of the tree is read in file order. Receipts
come from toolCall blocks: read/edit/write paths, bash command operands, any path argument.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from active_memory.evidence.sources.assemble import provider_for_model
from active_memory.evidence.sources.converter import (
    SessionConverter,
    block_marker,
    content_blocks,
    content_text,
)
from active_memory.evidence.sources.lanes import Lane
from active_memory.evidence.sources.peek import Look, Scan, dig, text_of
from active_memory.evidence.sources.timestamps import stamp_ms
from active_memory.evidence.sources.tool_paths import argument_paths
from active_memory.harnesses import harness_row
from active_memory.lanes import provider_names
from active_memory.models.runs import RunRecord, canonical_json

__all__ = ["LOADER", "NODE_ID", "PEEK", "load_pi_session"]

_ROW = harness_row("pi")
NODE_ID = _ROW.lane
_SKIPPED_BLOCKS = ("thinking",)
# pi's provider ids that are not ours (it writes ours, anthropic and openai, as we do).
_PROVIDERS = {"openai-codex": "openai", "azure-openai-responses": "openai"}


def _block(block: Any) -> str | None:
    """What a content block leaves: a text block its text, a thinking block nothing, any other
    block ``[type]``."""
    if not isinstance(block, dict) or block.get("type") in _SKIPPED_BLOCKS:
        return None
    return str(block.get("text", "")) if block.get("type") == "text" else block_marker(block)


class _Converter(SessionConverter):
    def __init__(self, workdir: Path) -> None:
        super().__init__(_ROW, workdir)
        self.model: str | None = None
        self.header = False

    def entry(self, entry: dict[str, Any], *, first: bool) -> None:
        kind = entry.get("type")
        when = stamp_ms(entry.get("timestamp"))
        facts = self.facts
        if kind == "session" and not self.header:
            self.header = True
            facts.session_id = text_of(entry.get("id"))
            facts.cwd = text_of(entry.get("cwd"))
            facts.version = f"session format v{entry.get('version', 1)}"
            self.main.saw(when)
        elif kind == "model_change":
            self.switch(text_of(entry.get("provider")), text_of(entry.get("modelId")))
        elif kind == "session_info":
            facts.extra["name"] = text_of(entry.get("name"))
        elif kind in ("compaction", "branch_summary"):
            summary = entry.get("summary")
            text = summary if isinstance(summary, str) else ""
            self.writer.write(self.main, "system", f"[{kind}] {text}".rstrip(), when)
        elif kind == "message" and isinstance(entry.get("message"), dict):
            self.message(entry["message"], when)

    def switch(self, provider: str | None, model: str | None) -> None:
        if model:
            self.model = model
        if provider:
            ours = provider if provider in provider_names() else _PROVIDERS.get(provider)
            self.facts.provider = ours or provider_for_model(model, provider)
            if self.model:
                self.facts.model_providers[self.model] = self.facts.provider

    def message(self, message: dict[str, Any], when: int | None) -> None:
        lane = self.main
        when = when if when is not None else stamp_ms(message.get("timestamp"))
        lane.saw(when)
        role = message.get("role")
        if role == "user":
            text = content_text(message.get("content"), _block)
            self.writer.write(lane, "user", text, when)
            lane.interrupted = False
            if self.facts.initial_input is None and text.strip():
                self.facts.initial_input = text
        elif role == "assistant":
            self.assistant(lane, message, when)
        elif role == "toolResult":
            text = content_text(message.get("content"), _block)
            error = "[error] " if message.get("isError") else ""
            self.writer.write(lane, "tool", error + text, when, text_of(message.get("toolName")))
        elif role == "bashExecution":
            output = message.get("output")
            text = f"$ {message.get('command', '')}\n{output if isinstance(output, str) else ''}"
            self.writer.write(lane, "tool", text, when, "bash")
        else:
            self.writer.write(lane, "system", content_text(message.get("content"), _block), when)

    def assistant(self, lane: Lane, message: dict[str, Any], when: int | None) -> None:
        if message.get("model") or message.get("provider"):
            self.switch(text_of(message.get("provider")), text_of(message.get("model")))
        lane.used(self.model)
        blocks = content_blocks(message.get("content"))
        texts = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") in _SKIPPED_BLOCKS:
                continue
            if block.get("type") == "toolCall":
                name = str(block.get("name") or "tool")[:128]
                given = block.get("arguments")
                arguments: dict[str, Any] = given if isinstance(given, dict) else {}
                paths = argument_paths(arguments, self.facts.cwd)
                seq = self.receipts.add(lane.id, when, name, paths)
                self.writer.write(lane, "assistant", canonical_json(arguments), when, tool=name,
                                  receipt=seq)  # fmt: skip
                continue
            text = str(block.get("text", "")) if block.get("type") == "text" else (
                f"[{str(block.get('type'))[:64]}]")  # fmt: skip
            texts.append(text)
            self.writer.write(lane, "assistant", text, when)
        if texts:
            lane.finish("\n".join(texts))
        stop = message.get("stopReason")
        lane.failed = stop == "error"
        lane.interrupted = stop == "aborted"


def load_pi_session(path: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> RunRecord:
    """Convert the pi session at ``path`` into a native record folder ``workdir`` and load it."""
    session_file = Path(path)
    converter = _Converter(Path(workdir))
    converter.read_session(session_file)
    return converter.record(
        session_file, session_id=session_file.stem, empty="has no messages of a pi session"
    )


# What the harness table finds here (evidence/sources/__init__.py).
LOADER = load_pi_session


def _peek(value: dict[str, Any], scan: Scan) -> Look:
    """The inventory's look at one line: the session header names the id and cwd."""
    if value.get("type") == "session":
        scan.session_id = scan.session_id or text_of(value.get("id"))
        scan.cwd = scan.cwd or text_of(value.get("cwd"))
    return Look(value.get("modelId") or dig(value, "message", "model"))


PEEK = _peek
