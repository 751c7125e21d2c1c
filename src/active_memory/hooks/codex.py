"""Codex ``PreToolUse`` hooks: the Claude Code envelope, with Codex's own tools.

Codex reports shell calls as ``Bash`` and edits as ``apply_patch``, both with their text in
``tool_input.command``; patch file headers (``*** Add File:``, ``*** Update File:``,
``*** Delete File:``, ``*** Move to:``) name the files. The answer has the same shape as Claude
Code's. Codex runs a hook only after the user has reviewed and trusted it.
"""

from __future__ import annotations

from active_memory.hooks import claude
from active_memory.hooks.base import Harness

__all__ = ["HARNESS"]

HARNESS = Harness("codex", claude.parse, claude.answer, claude.MAX_CONTEXT_CHARS)
