"""A Claude Code session transcript as a run record, so any Claude Code user can run a postmortem.

Input: ``~/.claude/projects/<project>/<session>.jsonl``: one JSON entry per line, ``type``
user/assistant (others such as summary, system or file-history-snapshot are skipped), with
``message.content`` blocks (text, tool_use ``{id, name, input}``, tool_result ``{tool_use_id,
content}``, image, document), ``isSidechain`` for subagent (Task tool) messages, ``sessionId``,
``cwd``, ``timestamp``, ``uuid``/``parentUuid``. Subagents are read from inline sidechains (older
versions), from ``<session>/subagents/agent-*.jsonl`` (newer versions) and from project-level
``agent-*.jsonl`` files whose ``sessionId`` is this session, one file at a time.

Output (see :mod:`.assemble`): a one-node graph ``claude-code``, one execution for the main
conversation and one per subagent (warm-up agents left out; a subagent the main conversation
launched whose file is missing becomes an execution marked unavailable), tool receipts from
tool_use blocks (tool name and file_path/path/notebook_path only, never other arguments).
Thinking blocks are not read; every other block leaves its text or a placeholder. The harness's
own injections (reminders, the local-command caveat and wrappers, Read's line-number prefixes) are
removed as :mod:`.claude_noise` says, each removal a counted ``noise`` cut.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from active_memory.errors import RunRecordError
from active_memory.evidence.budget import cut_text
from active_memory.evidence.sources.claude_files import (
    agent_files,
    initial_request,
    launched_agent,
    salvage,
)
from active_memory.evidence.sources.claude_noise import (
    REJECTED_REASON,
    Cleaned,
    clean_tool_result,
    clean_user_text,
    rejected_call,
    strip_caveat,
    strip_reminders,
)
from active_memory.evidence.sources.converter import (
    SessionConverter,
    block_marker,
    content_blocks,
    content_text,
)
from active_memory.evidence.sources.lanes import BoundedMap, Lane, relative_path
from active_memory.evidence.sources.lines import SourceLine
from active_memory.evidence.sources.peek import Look, Scan, dig, text_of
from active_memory.evidence.sources.timestamps import iso_ms
from active_memory.harnesses import harness_row
from active_memory.models.runs import RunRecord, canonical_json

__all__ = ["LOADER", "NODE_ID", "PEEK", "load_claude_session"]

_ROW = harness_row("claude")
NODE_ID = _ROW.lane
_PATH_KEYS = ("file_path", "path", "notebook_path")
_LAUNCH_TOOLS = ("Task", "Agent")
_SKIPPED_BLOCKS = ("thinking", "redacted_thinking")
_KEPT = 1024  # tool ids and chain links remembered: bounded, whatever the session's length
_LAUNCH_TEXT = 4096


def _placeholder(block: Any) -> str:
    """A block's text, or a marker saying what stood there (an image leaves ``[image]``)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "document":
        title = block.get("title") or (block.get("source") or {}).get("media_type")
        return f"[document: {str(title)[:200]}]" if title else "[document]"
    return block_marker(block)


class _Converter(SessionConverter):
    def __init__(self, session_file: Path, workdir: Path) -> None:
        super().__init__(_ROW, workdir)
        self.session_file = session_file
        self.agent_file: str | None = None  # the subagent whose own file is being read
        self.last_lane: Lane | None = None  # the lane the latest line went to
        self.sidechain_lane = BoundedMap(_KEPT)
        self.tool_names = BoundedMap(_KEPT)
        self.tool_seqs = BoundedMap(_KEPT)  # tool id -> receipt seq, to withdraw a rejected call
        self.launches: dict[str, tuple[str, int | None]] = {}
        self.request: list[str] = []  # the initial request as it is assembled
        self.request_open = True
        self.sidechains = 0

    # Reading -------------------------------------------------------------------------------

    def read_agent(self, path: Path, agent: str) -> None:
        """A subagent's own file: its lines go to its lane, whose file is closed once read."""
        self.agent_file, self.last_lane = agent, None
        self.read(path)
        if self.last_lane is not None:
            self.writer.close_lane(self.last_lane)
        self.agent_file = None

    def unreadable(self, line: SourceLine) -> None:
        super().unreadable(line)
        found = salvage(line.head)
        if found is None:
            return
        kind, hints = found
        lane = self.route(hints)
        role = "tool" if kind == "tool" else kind
        reason = f"line not read: {line.problem}"
        self.writer.write(
            lane, role, f"[line {line.number}: a {kind} record of {line.size} bytes, {reason}]",
            None,
        )  # fmt: skip
        self.last_lane = lane

    def route(self, entry: dict[str, Any]) -> Lane:
        session = str(entry.get("sessionId") or self.facts.session_id or self.session_file.stem)
        agent_file = self.agent_file
        agent = entry.get("agentId") or agent_file
        if agent_file is None and not entry.get("isSidechain"):
            return self.writer.lane("main", session)
        if agent:
            return self.writer.lane(f"agent-{agent}", f"{session}/agent-{agent}")
        # Inline sidechains of older versions: follow parentUuid to the chain's first message.
        uuid, parent = str(entry.get("uuid", "")), str(entry.get("parentUuid") or "")
        lane_id = self.sidechain_lane.get(parent)
        if lane_id is None:
            self.sidechains += 1
            lane_id = f"sidechain-{self.sidechains}"
        if uuid:
            self.sidechain_lane.remember(uuid, lane_id)
        return self.writer.lane(lane_id, f"{session}/{lane_id}")

    def entry(self, entry: dict[str, Any], *, first: bool) -> None:
        kind = entry.get("type")
        if kind not in ("user", "assistant") or not isinstance(entry.get("message"), dict):
            return
        facts = self.facts
        if self.agent_file is None and not entry.get("isSidechain"):
            facts.session_id = facts.session_id or text_of(entry.get("sessionId"))
            facts.cwd = facts.cwd or text_of(entry.get("cwd"))
            facts.version = text_of(entry.get("version")) or facts.version
            facts.extra["git_branch"] = text_of(entry.get("gitBranch")) or facts.extra.get(
                "git_branch"
            )
        lane = self.route(entry)
        when = iso_ms(entry.get("timestamp"))
        lane.saw(when)
        message = entry["message"]
        if kind == "assistant":
            self.assistant(lane, message, when, bool(entry.get("isApiErrorMessage")))
        else:
            self.user(lane, entry, when)
        self.last_lane = lane

    # Messages ------------------------------------------------------------------------------

    def assistant(self, lane: Lane, message: dict[str, Any], when: int | None, error: bool) -> None:
        answer = message.get("id") if isinstance(message.get("id"), str) else None
        if answer is None or answer != lane.last_message:
            lane.used(message.get("model"))
        lane.last_message = answer
        lane.failed = error
        blocks = content_blocks(message.get("content"))
        texts = []
        for block in blocks:
            if not isinstance(block, dict) or block.get("type") in _SKIPPED_BLOCKS:
                continue
            if block.get("type") in ("tool_use", "server_tool_use"):
                self.tool_use(lane, block, when)
                continue
            text = _placeholder(block)
            if block.get("type") == "text":
                texts.append(text)
            self.writer.write(lane, "assistant", text, when)
        if texts:
            lane.finish("\n".join(texts))

    def tool_use(self, lane: Lane, block: dict[str, Any], when: int | None) -> None:
        name = str(block.get("name") or "tool")[:128]
        given = block.get("input")
        tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
        self.tool_names.remember(str(block.get("id")), name)
        if lane.warmup:
            return  # the warm-up's calls are neither written nor receipts
        paths = [relative_path(tool_input[key], self.facts.cwd) for key in _PATH_KEYS
                 if isinstance(tool_input.get(key), str) and tool_input[key]]  # fmt: skip
        seq = self.receipts.add(lane.id, when, name, paths)
        self.tool_seqs.remember(str(block.get("id")), str(seq))
        self.writer.write(lane, "assistant", canonical_json(tool_input), when, tool=name,
                          receipt=seq)  # fmt: skip

    def user(self, lane: Lane, entry: dict[str, Any], when: int | None) -> None:
        blocks = content_blocks(entry["message"].get("content"))
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                self.tool_result(lane, entry, block, when)
                continue
            text = _placeholder(block) if block.get("type") != "text" else block.get("text")
            if not isinstance(text, str):
                continue
            if lane.records == 0 and lane.id != "main" and text.strip() == "Warmup":
                lane.warmup = True  # the harness's cache warm-up, not work
            cleaned = self.cleaned(lane, clean_user_text(text))
            if cleaned is not None:
                self.writer.write(lane, "user", cleaned, when)
            lane.interrupted = text.startswith("[Request interrupted")
            if lane.id == "main" and self.request_open:
                # The raw text: the request reader knows the command wrappers it folds.
                asked = strip_reminders(strip_caveat(text)).text or ""
                self.request_open = initial_request(self.request, asked, bool(entry.get("isMeta")))

    def cleaned(self, lane: Lane, result: Cleaned) -> str | None:
        """The text to write, with each harness removal counted as a ``noise`` cut."""
        if not lane.warmup:
            for reason, size in result.removed:
                self.cuts.add("noise", reason, size=size)
        return result.text

    def tool_result(
        self, lane: Lane, entry: dict[str, Any], block: dict[str, Any], when: int | None
    ) -> None:
        tool_id = str(block.get("tool_use_id"))
        tool = self.tool_names.get(tool_id)
        text = content_text(block.get("content"), _placeholder)
        failed = bool(block.get("is_error"))
        rejection = rejected_call(text)
        if rejection is not None:
            self.reject(lane, tool_id)
            self.writer.write(lane, "tool", rejection, when, tool=tool)
            return
        shown = self.cleaned(lane, clean_tool_result(text, tool, failed=failed)) or ""
        self.writer.write(lane, "tool", ("[error] " if failed else "") + shown, when, tool=tool)
        if lane.id == "main" and tool in _LAUNCH_TOOLS and len(self.launches) < _KEPT:
            agent = launched_agent(entry.get("toolUseResult"), text)
            if agent is not None:
                self.launches[agent] = (cut_text(text, _LAUNCH_TEXT)[0], when)

    def reject(self, lane: Lane, tool_id: str) -> None:
        """The user rejected the call: it stays in the transcript, but it is no receipt."""
        seq = self.tool_seqs.pop(tool_id, None)
        if seq is None or lane.warmup:
            return
        self.receipts.withdraw(int(seq))
        self.cuts.add("receipts", REJECTED_REASON)

    # Subagents -----------------------------------------------------------------------------

    def unreadable_agent(self, path: Path, agent: str, problem: str) -> None:
        """A subagent file that is no regular file (a FIFO, a device) stays visible, unread."""
        reason = f"subagent file {path.name} not read: it {problem}"
        self.cuts.add("executions", reason)
        self.unavailable_lane(agent, reason, f"[subagent {agent}: {reason}]", None)

    def unavailable_lane(self, agent: str, reason: str, text: str, when: int | None) -> Lane:
        session = self.facts.session_id or self.session_file.stem
        lane_id = f"agent-{agent}"
        lane = self.writer.lane(lane_id, f"{session}/{lane_id}")
        lane.saw(when)
        lane.unavailable = reason
        self.writer.write(lane, "system", text, when)
        self.writer.close_lane(lane)
        return lane

    def missing_agents(self) -> None:
        """A subagent the main conversation launched, whose file is gone, stays visible."""
        for agent, (text, when) in sorted(self.launches.items()):
            if f"agent-{agent}" in self.writer.lanes:
                continue
            lane = self.unavailable_lane(
                agent,
                "subagent transcript file not found",
                f"[subagent {agent}: launched by the main conversation, but its transcript file "
                "was not found]",
                when,
            )
            lane.finish(text)
            self.cuts.add("executions", "subagent launched but its transcript file is missing")


def load_claude_session(path: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> RunRecord:
    """Convert the session at ``path`` into a native record folder ``workdir`` and load it."""
    session_file = Path(path)
    if not session_file.is_file():
        raise RunRecordError("$", "no such Claude Code session file", source=str(session_file))
    converter = _Converter(session_file, Path(workdir))
    try:
        converter.read(session_file)
        if "main" not in converter.writer.lanes:
            raise RunRecordError(
                "$", "has no user or assistant messages of a main conversation",
                source=str(session_file),
            )  # fmt: skip
        for agent_path, agent, problem in agent_files(session_file, converter.facts.session_id):
            if problem is None:
                converter.read_agent(agent_path, agent)
            else:
                converter.unreadable_agent(agent_path, agent, problem)
        converter.missing_agents()
    finally:
        converter.writer.close()
    facts = converter.facts
    facts.session_id = facts.session_id or session_file.stem
    facts.initial_input = "\n\n".join(converter.request) or None
    return converter.assemble(session_file)


# What the harness table finds here (evidence/sources/__init__.py).
LOADER = load_claude_session


def _peek(value: dict[str, Any], scan: Scan) -> Look:
    """The inventory's look at one line: a sidechain (subagent) line names no session."""
    main = not value.get("isSidechain")
    if main:
        scan.session_id = scan.session_id or text_of(value.get("sessionId"))
        scan.cwd = scan.cwd or text_of(value.get("cwd"))
    return Look(dig(value, "message", "model") if value.get("type") == "assistant" else None, main)


PEEK = _peek
