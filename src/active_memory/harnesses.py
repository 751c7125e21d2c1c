"""The harness table: one row per coding harness, read by every layer that knows harnesses.

A harness is this row plus its two adapters: ``hooks/<name>.py`` (``HARNESS``: reads its hook
payloads, writes its answers) and ``evidence/sources/<source_module>.py`` (``LOADER``: converts
its session files into a run record). Hook dispatch, session detection and loading, the
inventory, ``hooks install``, host wiring, skills and the CLI's ``--harness`` choices all read
the names from here; ``tests/test_harnesses.py`` fails when a row has no adapter, and
``tests/test_names_defined_once.py`` when a harness name is listed anywhere else in ``src``
(the stdlib-only hook helper keeps its own tuple, checked against this one). The harnesses'
lanes join the provider lanes in :mod:`active_memory.lanes`.

The hook fallback imports this on every tool call, so it imports nothing: no ``dataclasses``,
``typing`` or ``pathlib`` at run time. Paths are strings here, which callers turn into paths.
"""

from __future__ import annotations

__all__ = ["HARNESSES", "HARNESS_NAMES", "FrozenRow", "HarnessRow", "harness_row"]


class FrozenRow:
    """A table row: its slots are set once, when it is made, because every reader shares it."""

    __slots__ = ()

    def __init__(self, **values: object) -> None:
        for slot, value in values.items():
            object.__setattr__(self, slot, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a {type(self).__name__} is frozen; {name!r} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a {type(self).__name__} is frozen; {name!r} cannot be deleted")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({getattr(self, 'name', '')!r})"


class HarnessRow(FrozenRow):
    """One coding harness.

    ``home`` is the harness's home folder below the user's home (``$home_variable`` moves it),
    ``sessions`` the folder inside it holding the session files that match ``session_files``
    (globs), and ``conversation_records`` the record types that make a session more than
    metadata. ``tool_event`` is the hook event active-memory answers, ``lane`` the lane a node
    run through this harness records, ``provider`` the provider its sessions are served by
    when the harness has only one. ``skills`` is where it reads agent skills: below its home,
    or below the user's home when it starts with ``~/``; None when it reads none.
    ``session_end_event`` is the hook event run when a session ends, which ``hooks install
    --learn`` writes (pi's is its extension's event; None: the harness has none).
    """

    __slots__ = (
        "conversation_records",
        "display",
        "home",
        "home_variable",
        "lane",
        "name",
        "provider",
        "session_end_event",
        "session_files",
        "sessions",
        "skills",
        "source_module",
        "tool_event",
    )

    conversation_records: tuple[str, ...]
    display: str
    home: str
    home_variable: str
    lane: str
    name: str
    provider: str | None
    session_end_event: str | None
    session_files: tuple[str, ...]
    sessions: str
    skills: str | None
    source_module: str
    tool_event: str

    def __init__(
        self,
        name: str,
        display: str,
        *,
        home_variable: str,
        home: str,
        sessions: str,
        session_files: tuple[str, ...],
        conversation_records: tuple[str, ...],
        tool_event: str,
        lane: str,
        provider: str | None = None,
        source_module: str | None = None,
        skills: str | None = None,
        session_end_event: str | None = None,
    ) -> None:
        super().__init__(
            name=name,
            display=display,
            home_variable=home_variable,
            home=home,
            sessions=sessions,
            session_files=session_files,
            conversation_records=conversation_records,
            tool_event=tool_event,
            lane=lane,
            provider=provider,
            source_module=source_module or name,
            skills=skills,
            session_end_event=session_end_event,
        )

    @property
    def shown_home(self) -> str:
        """The default home as users write it: ``~/.claude``."""
        return f"~/{self.home}"

    @property
    def override_variable(self) -> str:
        """active-memory's own variable for this harness's sessions folder (it wins)."""
        return f"ACTIVE_MEMORY_{self.name.upper()}_DIR"


HARNESSES: tuple[HarnessRow, ...] = (
    HarnessRow(
        "claude",
        "Claude Code",
        home_variable="CLAUDE_CONFIG_DIR",
        home=".claude",
        sessions="projects",
        # Subagent files beside and below a session belong to it (evidence/inventory.py).
        session_files=("*/*.jsonl",),
        conversation_records=("user", "assistant"),
        tool_event="PreToolUse",
        session_end_event="SessionEnd",
        lane="claude-code",
        provider="anthropic",
        source_module="claude_code",
        skills="skills",
    ),
    HarnessRow(
        "codex",
        "Codex CLI",
        home_variable="CODEX_HOME",
        home=".codex",
        sessions="sessions",
        session_files=("**/rollout-*.jsonl",),
        conversation_records=("response_item", "message", "function_call"),
        tool_event="PreToolUse",
        session_end_event="SessionEnd",
        lane="codex",
        provider="openai",
        skills="~/.agents/skills",
    ),
    HarnessRow(
        "copilot",
        "Copilot CLI",
        home_variable="COPILOT_HOME",
        home=".copilot",
        sessions="session-state",
        session_files=("*/events.jsonl", "*.jsonl"),
        conversation_records=("user.message", "assistant.message", "tool.execution_start"),
        tool_event="preToolUse",
        session_end_event="sessionEnd",
        lane="copilot",
    ),
    HarnessRow(
        "pi",
        "pi",
        home_variable="PI_CODING_AGENT_DIR",
        home=".pi/agent",
        sessions="sessions",
        session_files=("*/*.jsonl",),
        conversation_records=("message",),
        tool_event="tool_result",
        session_end_event="session_shutdown",
        lane="pi",
    ),
)
HARNESS_NAMES: tuple[str, ...] = tuple(row.name for row in HARNESSES)
_BY_NAME = {row.name: row for row in HARNESSES}


def harness_row(name: str) -> HarnessRow:
    """The row of harness ``name``; KeyError naming the harnesses for any other name (callers
    that take a user's input check it against :data:`HARNESS_NAMES` first)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown harness {name!r}; known: {', '.join(HARNESS_NAMES)}") from None
