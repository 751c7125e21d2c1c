"""The ``recall`` tool: what a hook would inject for a file, a folder, an identifier or a command.

Each request becomes the tool call a harness would report (a ``Read`` of the file, an ``LS`` of
the folder, a ``Grep`` for the identifier, a ``Bash`` command in ``cwd``), and goes through the
hooks' own recall session (:class:`~active_memory.recall.recall_session.RecallSession`): the same
signals, the same matcher and scores, the same byte budget (``--tokens`` × 4, within the
broker's response bound) and the same ``<active_memory>`` frame, byte for byte.

Once per conversation: an ``id@revision`` handed over in a conversation is not handed over
again in it (a new revision is). The conversation is the ``conversation`` argument when the
client gives one, else this MCP session: one stdio connection, so one server process. Exposures
are kept in the server's memory only (the server writes nothing), so a new session starts
afresh, as a new harness conversation does. A delivery is recorded when the answer is built,
just before it is returned: an MCP server cannot see whether the client showed it to its model.

A path outside the workspace recalls nothing and says so, naming only the workspace's root;
so does a command whose ``cwd`` is outside. A command's own ``cd`` outside is read as the hooks
read it: paths after it are ignored, identifiers in it still count.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

from active_memory.errors import LessonValidationError
from active_memory.mcp_server.answers import ToolAnswer
from active_memory.mcp_server.arguments import RecallArguments
from active_memory.mcp_server.reads import StoreReads
from active_memory.models.config import ActiveMemoryConfig
from active_memory.recall.exchange import MAX_RESPONSE_BYTES
from active_memory.recall.recall_session import Caller, RecallReport, RecallSession
from active_memory.recall.signals import ToolCall

__all__ = ["MAX_CONVERSATIONS", "NODE_ID", "RecallTool"]

NODE_ID = "mcp"
# Conversations one session tracks: each holds a set of keys, so their number is bounded too.
MAX_CONVERSATIONS = 256
# Room for the result envelope and JSON escaping inside the broker's response bound, as for
# a hook answer.
_ENVELOPE_BYTES = 512
_ECHO_CHARS = 80


def _echo(value: str) -> str:
    return repr(value if len(value) <= _ECHO_CHARS else value[:_ECHO_CHARS] + "…")


class RecallTool:
    """Recall for one MCP session over the workspace's lessons in ``reads``."""

    def __init__(self, reads: StoreReads, *, tokens: int = 8_000) -> None:
        self.reads = reads
        self.config = ActiveMemoryConfig(graph=False, hook_injection_tokens=tokens)
        self.budget_bytes = min(self.config.hook_injection_bytes,
                                MAX_RESPONSE_BYTES - _ENVELOPE_BYTES)  # fmt: skip
        self.session_conversation = f"mcp-session-{uuid.uuid4().hex}"
        self._session: RecallSession | None = None
        self._conversations: set[str] = set()

    def __call__(self, raw: Mapping[str, Any]) -> ToolAnswer:
        arguments = RecallArguments.parse(raw).checked()
        conversation = arguments.conversation or self.session_conversation
        self._track(conversation)
        workspace = self.reads.workspace
        call = self._tool_call(arguments)
        if call is None:
            what = "the folder" if arguments.cwd is not None else f"the {arguments.kind}"
            subject = arguments.cwd if arguments.cwd is not None else arguments.value
            text = (
                f"Nothing recalled: {what} {_echo(subject)} is outside the repository at "
                f"{str(workspace.root)!r}; this server serves that repository's lessons only."
            )
            return ToolAnswer(text, {"repository": workspace.key, "outside": True,
                                     "conversation": conversation, "report": None})  # fmt: skip
        generation, index, rebuilt = self.reads.recall_index()
        if self._session is None:
            self._session = RecallSession(index, workspace.spellings, self.config,
                                          manifest=False)  # fmt: skip
        elif rebuilt:
            self._session.replace_index(index)
        recall = self._session.recall(
            call, Caller(NODE_ID, conversation), budget_bytes=self.budget_bytes
        )
        text = recall.text or _nothing_new(arguments, recall.report)
        data = {"repository": workspace.key, "generation": generation, "outside": False,
                "conversation": conversation, "report": recall.report.to_dict()}  # fmt: skip
        recall.commit()
        return ToolAnswer(text, data)

    def _track(self, conversation: str) -> None:
        if conversation in self._conversations:
            return
        if len(self._conversations) >= MAX_CONVERSATIONS:
            raise LessonValidationError(
                "conversation",
                f"would be a new one beyond the {MAX_CONVERSATIONS} this session tracks; reuse "
                "an earlier id or start a new MCP session",
            )
        self._conversations.add(conversation)

    def _tool_call(self, arguments: RecallArguments) -> ToolCall | None:
        """The tool call a harness would report; None when it reaches outside the workspace."""
        workspace = self.reads.workspace
        root = str(workspace.root)
        value = arguments.value
        if arguments.kind == "identifier":
            return ToolCall("Grep", {"pattern": value}, root)
        if arguments.kind == "command":
            if arguments.cwd is None:
                return ToolCall("Bash", {"command": value}, root)
            relative = workspace.relative(arguments.cwd)
            if relative is None:
                return None
            return ToolCall("Bash", {"command": value}, os.path.join(root, relative))
        if workspace.relative(value) is None:
            return None
        if arguments.kind == "file":
            return ToolCall("Read", {"file_path": value}, root)
        return ToolCall("LS", {"path": value}, root)


def _nothing_new(arguments: RecallArguments, report: RecallReport) -> str:
    subject = f"{arguments.kind} {_echo(arguments.value)}"
    if not report.cards:
        return f"No stored lesson matches the {subject}."
    parts = []
    if report.already_delivered:
        parts.append(
            f"{len(report.already_delivered)} already delivered in this conversation "
            f"({', '.join(report.already_delivered)})"
        )
    if report.left_out:
        parts.append(
            f"{len(report.left_out)} left out for the {report.budget_bytes}-byte budget "
            f"({', '.join(report.left_out)}); they stay eligible"
        )
    return f"Nothing new for the {subject}: {len(report.cards)} matched, {'; '.join(parts)}."
