"""Codex ``PreToolUse`` hooks: the Claude Code envelope, with Codex's own tools.

Codex reports shell calls as ``Bash`` and edits as ``apply_patch``, both with their text in
``tool_input.command``; patch file headers (``*** Add File:``, ``*** Update File:``,
``*** Delete File:``, ``*** Move to:``) name the files. The answer has the same shape as Claude
Code's. Codex runs a hook only after the user has reviewed and trusted it.

Codex keeps ``additionalContext`` of at most 10,000 UTF-8 bytes in the conversation; a longer
one is truncated there and saved whole to a file (seen with Codex 0.171.0: 10,000 bytes pass,
10,001 spill, whatever the character count), so the cap counts bytes, not characters.
"""

from __future__ import annotations

from active_memory.hooks import claude
from active_memory.hooks.base import Harness

__all__ = ["HARNESS", "MAX_CONTEXT_BYTES"]

MAX_CONTEXT_BYTES = 10_000

HARNESS = Harness("codex", claude.parse, claude.answer, max_bytes=MAX_CONTEXT_BYTES)
