"""The three tools' arguments: the JSON Schemas clients see, and the models that check them.

Tool arguments come from a model, so they are untrusted: every string is bounded (a path as the
hooks bound one, a command as the signal reader scans one), unknown fields are refused, and a
bad value is one sentence naming the field (``value: ...``), returned as a tool error. The
schemas are written out rather than generated so each stays flat (no ``anyOf`` for optional
fields, which some clients refuse) and says in its descriptions what the tool does; a test keeps
each schema's properties equal to its model's fields.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from active_memory.errors import LessonValidationError
from active_memory.limits import LIMITS
from active_memory.models.base import Model
from active_memory.models.ids import validate_lesson_id
from active_memory.recall.exchange import id_field
from active_memory.recall.signals import MAX_SCAN_CHARS

__all__ = [
    "EXPLAIN_SCHEMA",
    "LIST_SCHEMA",
    "MAX_CONVERSATION_CHARS",
    "MAX_LIST_LIMIT",
    "MAX_PATH_CHARS",
    "RECALL_SCHEMA",
    "ExplainArguments",
    "ListArguments",
    "RecallArguments",
]

# What WorkspaceRoot.resolve reads of a path; a longer one is never inside the workspace.
MAX_PATH_CHARS = 4 * LIMITS.path_bytes
MAX_CONVERSATION_CHARS = 128
MAX_LIST_LIMIT = 200
_GRAPH_HASH = "^[0-9a-f]{64}$"
_LESSON_ID = "^lesson-[0-9A-HJKMNP-TV-Z]{26}$"
_LESSON_ID_CHARS = len("lesson-") + 26

RecallKind = Literal["file", "folder", "identifier", "command"]
_KIND_LIMITS: dict[str, int] = {
    "file": MAX_PATH_CHARS,
    "folder": MAX_PATH_CHARS,
    "identifier": LIMITS.identifier_max_chars,
    "command": MAX_SCAN_CHARS,
}
Conversation = Annotated[str, Field(min_length=1, max_length=MAX_CONVERSATION_CHARS)]


class RecallArguments(Model):
    kind: RecallKind
    value: Annotated[str, Field(min_length=1, max_length=MAX_SCAN_CHARS)]
    cwd: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)] | None = None
    conversation: Conversation | None = None

    def checked(self) -> RecallArguments:
        """Self, after the rules one field alone cannot state; LessonValidationError otherwise."""
        limit = _KIND_LIMITS[self.kind]
        if len(self.value) > limit:
            raise LessonValidationError(
                "value", f"is {len(self.value)} characters; a {self.kind} may have {limit}"
            )
        if "\0" in self.value or (self.cwd is not None and "\0" in self.cwd):
            raise LessonValidationError("value", "holds a NUL character; no path or command does")
        if self.cwd is not None and self.kind != "command":
            raise LessonValidationError("cwd", f"applies to a command only, not to a {self.kind}")
        if self.conversation is not None and id_field(self.conversation) is None:
            raise LessonValidationError(
                "conversation", "holds a control, line-separator or bidirectional character"
            )
        return self


class ExplainArguments(Model):
    # The length is checked first, so a huge value is refused without being quoted back.
    id: Annotated[str, Field(min_length=1, max_length=_LESSON_ID_CHARS)]

    def checked(self) -> ExplainArguments:
        validate_lesson_id("id", self.id)
        return self


class ListArguments(Model):
    scope: Literal["repository", "graph"] = "repository"
    graph_hash: Annotated[str, Field(pattern=_GRAPH_HASH)] | None = None
    node: Annotated[str, Field(min_length=1, max_length=LIMITS.node_id_bytes)] | None = None
    offset: Annotated[int, Field(ge=0, le=LIMITS.revision_max)] = 0
    limit: Annotated[int, Field(ge=1, le=MAX_LIST_LIMIT)] = 50

    def checked(self) -> ListArguments:
        if self.scope == "graph" and self.graph_hash is None:
            raise LessonValidationError(
                "graph_hash", "is required for the graph scope (the 64-hex graph hash of a run)"
            )
        if self.scope == "repository" and (self.graph_hash is not None or self.node is not None):
            field = "graph_hash" if self.graph_hash is not None else "node"
            raise LessonValidationError(field, 'applies to scope "graph" only')
        return self


_CONVERSATION_PROPERTY: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_CONVERSATION_CHARS,
    "description": (
        "Optional conversation id. Each lesson is delivered once per conversation; without "
        "one, this MCP session is the conversation."
    ),
}

RECALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {
            "type": "string",
            "enum": ["file", "folder", "identifier", "command"],
            "description": "What you are about to touch.",
        },
        "value": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_SCAN_CHARS,
            "description": (
                "A file or folder path (relative to the repository root, or absolute inside "
                "it; up to 1024 characters), an identifier (up to 128), or a shell command."
            ),
        },
        "cwd": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_PATH_CHARS,
            "description": "For a command: the folder it runs in (default: the repository root).",
        },
        "conversation": _CONVERSATION_PROPERTY,
    },
    "required": ["kind", "value"],
    "additionalProperties": False,
}

EXPLAIN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {
            "type": "string",
            "pattern": _LESSON_ID,
            "description": "A lesson id (lesson-<ULID>), as recall and list show it.",
        }
    },
    "required": ["id"],
    "additionalProperties": False,
}

LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scope": {
            "type": "string",
            "enum": ["repository", "graph"],
            "default": "repository",
            "description": (
                "repository: this repository's lessons; graph: the lessons of one agent graph "
                "(needs graph_hash) seen from this repository."
            ),
        },
        "graph_hash": {
            "type": "string",
            "pattern": _GRAPH_HASH,
            "description": "The graph hash of a run (64 lowercase hex digits).",
        },
        "node": {
            "type": "string",
            "minLength": 1,
            "maxLength": LIMITS.node_id_bytes,
            "description": "Only this node's lessons (graph scope).",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Lessons to skip: the previous page's offset plus its limit.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIST_LIMIT,
            "default": 50,
            "description": f"Lessons per page (at most {MAX_LIST_LIMIT}).",
        },
    },
    "additionalProperties": False,
}
