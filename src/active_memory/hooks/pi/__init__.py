"""pi: a product-owned extension appends recalled cards to a tool's result.

The extension (``active-memory.ts``, shipped here as package data) listens to
``pi.on("tool_result")`` and posts ``{tool, input, cwd, sessionId}`` to the broker; tools are
read/edit/write ``{path}``, grep/find ``{pattern, path}`` and bash ``{command}``. The answer is
``{"additionalContext": "…"}``, which the extension appends as a text block to ``content``. Its
handler never throws: a throwing handler would block the tool.
"""

from __future__ import annotations

from _collections_abc import Mapping  # collections.abc's, without collections (1.5 ms a call)

from active_memory.hooks.base import Harness, ParsedCall, flat_answer, flat_call
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable
    from typing import Any

__all__ = ["EXTENSION_NAME", "HARNESS", "extension_source", "parse"]

EXTENSION_NAME = "active-memory.ts"


def parse(payload: Any) -> ParsedCall | None:
    return flat_call(payload, ("tool", "toolName"), _arguments, ("sessionId",))


def _arguments(payload: Mapping[str, Any]) -> Any:
    return payload.get("input")


HARNESS = Harness("pi", parse, flat_answer, None)


def extension_source() -> Traversable:
    """The extension file, for ``pi -e`` (contained mode) or copying into ``.pi/extensions``."""
    # Imported here, not with the adapter: the hook fallback loads the adapter on every tool
    # call, and importlib.resources costs more than that whole call.
    from importlib import resources

    return resources.files(__name__).joinpath(EXTENSION_NAME)
