"""What a harness a host launches needs to reach the host's open run (its broker), per harness.

``ActiveRun.harness_wiring(harness, node_id, conversation_id)`` returns a :class:`HarnessWiring`:

* ``env``, for every harness: the run's broker, token, ids and ticket (what ``hook_env``
  returns), to merge into the harness process's environment;
* ``hook``, the hook entry for the harness's own hook file, and ``settings``, that file's whole
  document holding only that entry:

  - Claude Code: an ``http`` hook to this run's broker, with the token and the node,
    conversation and execution ids as literal headers (nothing read from the environment). The
    host writes ``settings`` to a private file of its own (:meth:`HarnessWiring.write_settings`)
    and launches ``claude --settings FILE``, so the run's receipts and deliveries are recorded
    whatever ``hooks install`` put in the project (a project hook written while ``serve`` runs
    reaches ``serve``, not this run);
  - Codex (``hooks.json``) and Copilot CLI (``.github/hooks/*.json`` or
    ``~/.copilot/hooks/*.json``): a command hook running the standard-library helper, which
    asks the broker ``env`` names. The command holds nothing of the run, so a hook installed
    once (and, for Codex, trusted once) serves every run: only ``env`` changes;

* ``args``: pi's extension on its command line (``pi -e <extension>``); it reads ``env``.

Everything here is plain data; nothing is written until the host writes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from active_memory.errors import RecallError
from active_memory.harnesses import HARNESS_NAMES, harness_row
from active_memory.hooks.install import (
    CLAUDE_MATCHER,
    CODEX_MATCHER,
    HOOK_TIMEOUT_S,
    claude_http_hook,
    helper_command,
)
from active_memory.hooks.pi import extension_source
from active_memory.private_files import write_private_text

__all__ = ["HarnessWiring", "harness_wiring", "no_wiring"]


@dataclass(frozen=True, slots=True)
class HarnessWiring:
    """How one harness process reaches one run's broker: see the module docstring."""

    harness: str
    env: Mapping[str, str]
    hook: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] | None = None
    args: tuple[str, ...] = field(default=())

    def write_settings(self, path: str | os.PathLike[str]) -> Path:
        """Write ``settings`` to ``path`` (mode 0600, atomically: it holds the run's token for
        Claude Code; a missing folder is made 0700) and return it. RecallError for a harness
        without a settings document (pi)."""
        if self.settings is None:
            raise RecallError(
                f"{self.harness} has no hook file to write; merge wiring.env into its environment"
            )
        target = Path(path)
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private_text(target, json.dumps(self.settings, indent=2) + "\n")
        return target


def _ids(ids: Mapping[str, str | None]) -> dict[str, str]:
    # The broker percent-decodes these headers; encoded, any id is one safe header value
    # (and no "$" a harness could take for an environment variable).
    return {
        f"X-Active-Memory-{name.capitalize()}": quote(value, safe="")
        for name, value in ids.items()
        if value
    }


def _known(harness: str) -> None:
    if harness not in HARNESS_NAMES:
        raise RecallError(f"unknown harness {harness!r}; choose one of {', '.join(HARNESS_NAMES)}")


def no_wiring(harness: str) -> HarnessWiring:
    """The wiring of a run with active memory disabled: nothing to set, no hook."""
    _known(harness)
    return HarnessWiring(harness, {})


def harness_wiring(
    harness: str,
    env: Mapping[str, str],
    *,
    url: str,
    token: str,
    ids: Mapping[str, str | None],
    python: str | None = None,
) -> HarnessWiring:
    """The wiring of ``harness`` to the broker at ``url`` (``…/hook``) holding ``token``;
    ``env`` is the run's ``hook_env``. RecallError naming the harnesses for an unknown one."""
    _known(harness)
    event = harness_row(harness).tool_event
    if harness == "claude":
        hook = claude_http_hook(url, token=token)
        hook["headers"] = {**hook["headers"], **_ids(ids)}
        settings = {"hooks": {event: [{"matcher": CLAUDE_MATCHER, "hooks": [hook]}]}}
        return HarnessWiring(harness, dict(env), hook, settings)
    if harness == "codex":
        command = helper_command(harness, python=python)
        hook = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
        settings = {"hooks": {event: [{"matcher": CODEX_MATCHER, "hooks": [hook]}]}}
        return HarnessWiring(harness, dict(env), hook, settings)
    if harness == "copilot":
        command = helper_command(harness, python=python)
        hook = {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}
        return HarnessWiring(harness, dict(env), hook, {"version": 1, "hooks": {event: [hook]}})
    if harness == "pi":
        return HarnessWiring(harness, dict(env), args=("-e", str(extension_source())))
    # A row added to the harness table without its wiring here (tests/test_harnesses.py).
    raise RecallError(f"host wiring does not know {harness_row(harness).display} yet")
