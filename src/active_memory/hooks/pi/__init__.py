"""pi: a product-owned extension appends recalled cards to a tool's result.

The extension (``active-memory.ts``, shipped here as package data) listens to
``pi.on("tool_result")`` and posts ``{tool, input, cwd, sessionId}`` to the broker; tools are
read/edit/write ``{path}``, grep/find ``{pattern, path}`` and bash ``{command}``. The answer is
``{"additionalContext": "…"}``, which the extension appends as a text block to ``content``. Its
handler never throws: a throwing handler would block the tool.
"""

from __future__ import annotations

from collections.abc import Mapping

from active_memory.hooks.base import EMPTY, Harness, ParsedCall, text_field
from active_memory.recall.signals import ToolCall

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers see True
if TYPE_CHECKING:
    from importlib.abc import Traversable
    from typing import Any

__all__ = ["EXTENSION_NAME", "HARNESS", "answer", "extension_source", "parse"]

EXTENSION_NAME = "active-memory.ts"


def parse(payload: Any) -> ParsedCall | None:
    if not isinstance(payload, Mapping):
        return None
    tool = text_field(payload, "tool", "toolName")
    if tool is None:
        return None
    arguments = payload.get("input")
    call = ToolCall(
        tool, arguments if isinstance(arguments, Mapping) else {}, text_field(payload, "cwd")
    )
    return ParsedCall(call, text_field(payload, "sessionId"))


def answer(context: str) -> dict[str, Any]:
    return {"additionalContext": context} if context else dict(EMPTY)


HARNESS = Harness("pi", parse, answer, None)


def extension_source() -> Traversable:
    """The extension file, for ``pi -e`` (contained mode) or copying into ``.pi/extensions``."""
    # Imported here, not with the adapter: the hook fallback loads the adapter on every tool
    # call, and importlib.resources costs more than that whole call.
    from importlib import resources

    return resources.files(__name__).joinpath(EXTENSION_NAME)
