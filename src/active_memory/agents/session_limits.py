"""The bounds of one specialist session: turns, tool calls and output tokens per turn."""

from __future__ import annotations

from dataclasses import dataclass

from active_memory.errors import ConfigError

__all__ = [
    "DEFAULT_ANSWER_TOKENS",
    "DEFAULT_INVESTIGATION_TOKENS",
    "DEFAULT_REASONING_TOKENS",
    "SessionLimits",
]

DEFAULT_ANSWER_TOKENS = 16_384
DEFAULT_INVESTIGATION_TOKENS = 4_096
DEFAULT_REASONING_TOKENS = 8_192


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Bounds on one session: provider calls (turns), tool calls, output tokens per turn.

    ``answer_tokens`` is the most an answer turn may ask for (its cap is lower when the
    contract's largest answer needs less, see :mod:`.output_bounds`); ``investigation_tokens``
    the cap of a turn that investigates; ``reasoning_tokens`` is added to both when the binding
    sets a reasoning effort, since reasoning counts against the same cap.
    """

    max_turns: int = 24
    max_tool_calls: int = 64
    answer_tokens: int = DEFAULT_ANSWER_TOKENS
    investigation_tokens: int = DEFAULT_INVESTIGATION_TOKENS
    reasoning_tokens: int = DEFAULT_REASONING_TOKENS

    def __post_init__(self) -> None:
        if self.max_turns < 2:
            raise ConfigError("limits.max_turns", "must be at least 2 (an answer and a repair)")
        if self.max_tool_calls < 0:
            raise ConfigError("limits.max_tool_calls", "must not be negative")
        if self.investigation_tokens < 1:
            raise ConfigError("limits.investigation_tokens", "must be at least 1")
        if self.reasoning_tokens < 0:
            raise ConfigError("limits.reasoning_tokens", "must not be negative")
        if self.answer_tokens < self.investigation_tokens:
            raise ConfigError(
                "limits.answer_tokens",
                f"is {self.answer_tokens}; it must be at least investigation_tokens "
                f"({self.investigation_tokens})",
            )
