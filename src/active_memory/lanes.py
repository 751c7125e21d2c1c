"""The lane table: one row per lane a model binding can name.

An API lane is a provider's own way in (its SDK client for that endpoint): the row names the
provider and the install extra that brings the SDK. Its adapter is the provider's module,
``agents/providers/<provider>.py`` (``PROVIDER``, whose ``lanes`` come from here), which the
provider registry imports when a binding asks for it. A harness lane is what a node run through
a coding harness records (``claude-code``…); it comes from the harness's row
(:mod:`active_memory.harnesses`) and has no provider of its own. A harness lane with a
``runner`` runs a specialist inheriting it as a fresh non-interactive session of the harness
itself (``agents/harness_lanes/<runner>.py``, on the user's own login); one without a runner
still means the binding's provider on that provider's default API lane.

``tests/test_lanes.py`` fails when a provider has no adapter or its adapter's lanes differ from
these rows; ``tests/test_names_defined_once.py`` when a lane name is listed anywhere else in
``src``. Standard library only, imports nothing at run time (the CLI reads it at start-up).
"""

from __future__ import annotations

from active_memory.harnesses import HARNESSES, FrozenRow

__all__ = [
    "API_LANE_NAMES",
    "LANES",
    "LANE_OPTION_NAMES",
    "SPECIALIST_SESSION_MARKER",
    "SPECIALIST_SESSION_VARIABLE",
    "LaneRow",
    "api_lanes",
    "is_harness_lane",
    "lane_row",
    "provider_names",
    "runner_lanes",
]

# A specialist's session run by a harness is marked twice, so automatic learning never reviews
# it: this variable is set in the harness's environment (its hooks and any child see it), and
# its first message starts with this line (its session file keeps it).
SPECIALIST_SESSION_VARIABLE = "ACTIVE_MEMORY_SPECIALIST_SESSION"
SPECIALIST_SESSION_MARKER = "[active-memory specialist session: never reviewed by learning]"


class LaneRow(FrozenRow):
    """One lane: ``provider`` and install ``extra`` for an API lane, ``harness`` (the harness's
    name) for a harness lane, and ``runner``, the module under ``agents/harness_lanes/`` that
    runs specialist sessions on the harness itself (None: the provider's default API lane)."""

    __slots__ = ("extra", "harness", "name", "provider", "runner")

    extra: str | None
    harness: str | None
    name: str
    provider: str | None
    runner: str | None

    def __init__(
        self,
        name: str,
        *,
        provider: str | None = None,
        extra: str | None = None,
        harness: str | None = None,
        runner: str | None = None,
    ) -> None:
        # The provider's own extra unless the lane needs more (bedrock and vertex bring theirs).
        super().__init__(
            name=name, provider=provider, extra=extra or provider, harness=harness, runner=runner
        )


_API_LANES = (
    LaneRow("anthropic", provider="anthropic"),
    LaneRow("bedrock", provider="anthropic", extra="bedrock"),
    LaneRow("vertex", provider="anthropic", extra="vertex"),
    LaneRow("openai", provider="openai"),
    LaneRow("azure", provider="openai"),
    LaneRow("compatible", provider="openai"),
)
# The harnesses whose own CLI runs specialist sessions, by harness name: the module under
# agents/harness_lanes/ that does it.
_RUNNERS = {"claude": "claude_code", "codex": "codex", "copilot": "copilot", "pi": "pi"}
LANES: tuple[LaneRow, ...] = (
    *_API_LANES,
    *(LaneRow(row.lane, harness=row.name, runner=_RUNNERS.get(row.name)) for row in HARNESSES),
)
# The API lanes, in the table's order.
API_LANE_NAMES: tuple[str, ...] = tuple(row.name for row in _API_LANES)
# What ``--lane`` offers: the API lanes, then the harness lanes that have a runner.
LANE_OPTION_NAMES: tuple[str, ...] = (
    *API_LANE_NAMES,
    *(row.name for row in LANES if row.runner is not None),
)
_BY_NAME = {row.name: row for row in LANES}


def lane_row(name: str) -> LaneRow | None:
    """The row of lane ``name``, None for a lane this table does not know."""
    return _BY_NAME.get(name)


def provider_names() -> tuple[str, ...]:
    """The built-in providers, in the table's order."""
    return tuple(dict.fromkeys(row.provider for row in _API_LANES if row.provider is not None))


def api_lanes(provider: str) -> tuple[str, ...]:
    """The API lanes of ``provider``; its default lane (named like it) first."""
    return tuple(row.name for row in _API_LANES if row.provider == provider)


def is_harness_lane(name: str | None) -> bool:
    """Whether ``name`` is the lane of a harness (``claude-code``…), not of an API."""
    row = _BY_NAME.get(name) if name is not None else None
    return row is not None and row.harness is not None


def runner_lanes() -> tuple[LaneRow, ...]:
    """The harness lanes whose specialist sessions the harness itself runs."""
    return tuple(row for row in LANES if row.runner is not None)
