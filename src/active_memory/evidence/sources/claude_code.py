"""A Claude Code session transcript as a run record, so any Claude Code user can run a postmortem.

Input: ``~/.claude/projects/<project>/<session>.jsonl``: one JSON entry per line, ``type``
user/assistant (others such as summary, system or file-history-snapshot are skipped), with
``message.content`` blocks (text, tool_use ``{id, name, input}``, tool_result ``{tool_use_id,
content}``), ``isSidechain`` for subagent (Task tool) messages, ``sessionId``, ``cwd``,
``timestamp``, ``uuid``/``parentUuid``. Subagents are read from inline sidechains (older
versions), from ``<session>/subagents/agent-*.jsonl`` (newer versions) and from project-level
``agent-*.jsonl`` files whose ``sessionId`` is this session.

Output: a native record folder written to ``workdir`` (run.json + normalised transcripts) and
loaded back: a one-node graph (``claude-code``, kind worker, binding anthropic + the main
conversation's model), one execution for the main conversation and one per subagent, tool
receipts from tool_use blocks (tool name and file_path/path/notebook_path only, never other
arguments). There is no latched outcome: Claude Code records none.
"""

from __future__ import annotations

import json
import os
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from active_memory.errors import RunRecordError
from active_memory.evidence.budget import cut_text
from active_memory.evidence.pager import PageLimits, iter_pages
from active_memory.models.runs import (
    AuthoredGraph,
    Binding,
    Checkout,
    Execution,
    ExecutionStatus,
    GraphNode,
    RunRecord,
    ToolReceipt,
    canonical_json,
    dump_run_record,
    load_run_record,
)
from active_memory.repository import local_repository_key

__all__ = ["NODE_ID", "load_claude_session"]

NODE_ID = "claude-code"
RECORD_TEXT_BYTES = 64 * 1024
RECEIPT_RING = 512
_PATH_KEYS = ("file_path", "path", "notebook_path")
_LINES = PageLimits(max_records=512, max_bytes=4 << 20, max_line_bytes=8 << 20)
_TOOL_NAMES_KEPT = 4096


def _file_name(lane_id: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in lane_id)
    return f"{safe[:96]}.jsonl"


def _ms(stamp: Any) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else canonical_json(content)


@dataclass(slots=True)
class _Lane:
    """One conversation (main or a subagent) being converted."""

    id: str
    conversation: str
    sidechain: bool
    writer: IO[str]
    started: int | None = None
    ended: int | None = None
    models: Counter[str] = field(default_factory=Counter)
    completion: str | None = None
    first_user: str | None = None
    interrupted: bool = False
    api_error: bool = False


class _Converter:
    def __init__(self, session_file: Path, workdir: Path) -> None:
        self.session_file = session_file
        self.workdir = workdir
        self.lanes: dict[str, _Lane] = {}
        self.sidechain_lane: dict[str, str] = {}
        self.tool_names: dict[str, str] = {}
        self.first_receipts: list[ToolReceipt] = []
        self.last_receipts: deque[ToolReceipt] = deque(maxlen=RECEIPT_RING // 2)
        self.seq = 0
        self.unreadable = 0
        self.session_id: str | None = None
        self.cwd: str | None = None
        self.version: str | None = None
        self.branch: str | None = None

    def lane(self, lane_id: str, conversation: str, sidechain: bool) -> _Lane:
        lane = self.lanes.get(lane_id)
        if lane is None:
            (self.workdir / "transcripts").mkdir(parents=True, exist_ok=True)
            path = self.workdir / "transcripts" / _file_name(lane_id)
            writer = path.open("w", encoding="utf-8")
            lane = self.lanes[lane_id] = _Lane(lane_id, conversation, sidechain, writer)
        return lane

    def read(self, path: Path, agent_file: str | None) -> None:
        for page in iter_pages(path, _LINES):
            for line in page.lines:
                try:
                    entry = json.loads(line.text) if not line.cut else None
                except ValueError:
                    entry = None
                if not isinstance(entry, dict):
                    self.unreadable += 1
                    continue
                self.entry(entry, agent_file)

    def route(self, entry: dict[str, Any], agent_file: str | None) -> _Lane:
        session = str(entry.get("sessionId") or self.session_id or self.session_file.stem)
        agent = entry.get("agentId") or agent_file
        if agent_file is None and not entry.get("isSidechain"):
            return self.lane("main", session, sidechain=False)
        if agent:
            return self.lane(f"agent-{agent}", f"{session}/agent-{agent}", sidechain=True)
        # Inline sidechains of older versions: follow parentUuid to the chain's first message.
        uuid, parent = str(entry.get("uuid", "")), str(entry.get("parentUuid") or "")
        lane_id = self.sidechain_lane.get(parent)
        if lane_id is None:
            lane_id = f"sidechain-{sum(lane.sidechain for lane in self.lanes.values()) + 1}"
        self.sidechain_lane[uuid] = lane_id
        return self.lane(lane_id, f"{session}/{lane_id}", sidechain=True)

    def entry(self, entry: dict[str, Any], agent_file: str | None) -> None:
        kind = entry.get("type")
        if kind not in ("user", "assistant") or not isinstance(entry.get("message"), dict):
            return
        if agent_file is None and not entry.get("isSidechain"):
            self.session_id = self.session_id or entry.get("sessionId")
            self.cwd = self.cwd or entry.get("cwd")
            self.version = entry.get("version") or self.version
            self.branch = entry.get("gitBranch") or self.branch
        lane = self.route(entry, agent_file)
        when = _ms(entry.get("timestamp"))
        if when is not None:
            lane.started = when if lane.started is None else min(lane.started, when)
            lane.ended = when if lane.ended is None else max(lane.ended, when)
        message = entry["message"]
        if kind == "assistant":
            self.assistant(lane, message, when, bool(entry.get("isApiErrorMessage")))
        else:
            self.user(lane, message, when, bool(entry.get("isMeta")))

    def write(self, lane: _Lane, role: str, text: str, when: int | None, tool: Any = None) -> None:
        record: dict[str, Any] = {"role": role, "text": cut_text(text, RECORD_TEXT_BYTES)[0]}
        if isinstance(tool, str):
            record["tool"] = tool
        if when is not None:
            record["time_ms"] = when
        lane.writer.write(json.dumps(record, ensure_ascii=False) + "\n")

    def assistant(
        self, lane: _Lane, message: dict[str, Any], when: int | None, error: bool
    ) -> None:
        model = message.get("model")
        if isinstance(model, str) and model and not model.startswith("<"):
            lane.models[model] += 1
        lane.api_error = error
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
                self.write(lane, "assistant", block["text"], when)
            elif block.get("type") == "tool_use":
                self.tool_use(lane, block, when)
        if texts:
            lane.completion = cut_text("\n".join(texts), RECORD_TEXT_BYTES)[0]

    def tool_use(self, lane: _Lane, block: dict[str, Any], when: int | None) -> None:
        name = str(block.get("name") or "tool")
        given = block.get("input")
        tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
        if len(self.tool_names) >= _TOOL_NAMES_KEPT:
            self.tool_names.pop(next(iter(self.tool_names)))
        self.tool_names[str(block.get("id"))] = name
        self.write(lane, "assistant", canonical_json(tool_input), when, tool=name)
        paths = [self.relative(tool_input[key]) for key in _PATH_KEYS
                 if isinstance(tool_input.get(key), str) and tool_input[key]]  # fmt: skip
        receipt = ToolReceipt(
            seq=self.seq, execution=lane.id, time_ms=when or 0, tool=name, paths=tuple(paths)
        )
        self.seq += 1
        if len(self.first_receipts) < RECEIPT_RING // 2:
            self.first_receipts.append(receipt)
        else:
            self.last_receipts.append(receipt)

    def user(self, lane: _Lane, message: dict[str, Any], when: int | None, meta: bool) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                tool = self.tool_names.get(str(block.get("tool_use_id")))
                text = _block_text(block.get("content"))
                self.write(lane, "tool", ("[error] " if block.get("is_error") else "") + text,
                           when, tool=tool)  # fmt: skip
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                text = block["text"]
                self.write(lane, "user", text, when)
                lane.interrupted = text.startswith("[Request interrupted")
                if lane.first_user is None and not meta and not text.lstrip().startswith("<"):
                    lane.first_user = text

    def relative(self, path: str) -> str:
        if self.cwd and os.path.isabs(path):
            relative = os.path.relpath(os.path.normpath(path), self.cwd)
            if not relative.startswith(".."):
                return Path(relative).as_posix()
        return os.path.normpath(path)

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.writer.close()


def _agent_files(session_file: Path, session_id: str | None) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    folder = session_file.with_suffix("") / "subagents"
    if folder.is_dir():
        for path in sorted(folder.glob("agent-*.jsonl")):
            if not path.stem.startswith("agent-acompact"):
                found.append((path, path.stem[len("agent-") :]))
    for path in sorted(session_file.parent.glob("agent-*.jsonl")):
        first = next(iter(iter_pages(path, PageLimits(max_records=1))), None)
        try:
            entry = json.loads(first.lines[0].text) if first and first.lines else {}
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("sessionId") == session_id:
            found.append((path, path.stem[len("agent-") :]))
    return found


def _status(lane: _Lane) -> ExecutionStatus:
    if lane.interrupted:
        return "cancelled"
    return "error" if lane.api_error else "completed"


def load_claude_session(path: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> RunRecord:
    """Convert the session at ``path`` into a native record folder ``workdir`` and load it."""
    session_file, target = Path(path), Path(workdir)
    if not session_file.is_file():
        raise RunRecordError("$", "no such Claude Code session file", source=str(session_file))
    converter = _Converter(session_file, target)
    try:
        converter.read(session_file, None)
        if "main" not in converter.lanes:
            raise RunRecordError(
                "$", "has no user or assistant messages of a main conversation",
                source=str(session_file),
            )  # fmt: skip
        for agent_path, agent in _agent_files(session_file, converter.session_id):
            converter.read(agent_path, agent)
    finally:
        converter.close()
    try:
        return _record(converter, target)
    except RunRecordError as error:
        # A session value the record refuses (an agent id with a space, say): name the session.
        if error.source is not None:
            raise
        raise RunRecordError(error.path, error.problem, source=str(session_file)) from None


def _record(converter: _Converter, target: Path) -> RunRecord:
    main = converter.lanes["main"]
    model = main.models.most_common(1)[0][0] if main.models else "unknown"
    binding = {"provider": "anthropic", "model": model}
    raw = {"name": NODE_ID, "nodes": [{"id": NODE_ID, "kind": "worker", "binding": binding}]}
    others = (lane for lane in converter.lanes.values() if lane is not main)
    lanes = [main, *sorted(others, key=lambda lane: (lane.started or 0, lane.id))]
    executions = tuple(
        Execution(
            id=lane.id,
            node_id=NODE_ID,
            occurrence=index + 1,
            attempt=1,
            status=_status(lane),
            started_ms=lane.started or 0,
            ended_ms=lane.ended,
            conversation_id=lane.conversation,
            completion=lane.completion,
            transcript=target / "transcripts" / _file_name(lane.id),
        )
        for index, lane in enumerate(lanes)
    )
    session = converter.session_id or converter.session_file.stem
    record = RunRecord(
        run_id=f"claude-{session}"[:128],
        graph=AuthoredGraph(
            name=NODE_ID,
            nodes=(
                GraphNode(
                    id=NODE_ID, kind="worker", binding=Binding(provider="anthropic", model=model)
                ),
            ),
            raw=raw,
        ),
        runtime={
            "source": "claude-code",
            "session_id": session,
            "version": converter.version,
            "cwd": converter.cwd,
            "git_branch": converter.branch,
            "subagents": len(lanes) - 1,
            "lines_unreadable": converter.unreadable,
        },
        executions=executions,
        checkout=None
        if not converter.cwd
        else Checkout(path=Path(converter.cwd), repository=local_repository_key(converter.cwd)),
        initial_input=main.first_user,
        receipts=tuple(converter.first_receipts) + tuple(converter.last_receipts),
    )
    dump_run_record(record, target)
    return load_run_record(target)
