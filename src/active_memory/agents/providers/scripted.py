"""A scripted provider for tests: a list of responses, or a function of the request.

It fails loudly, like a replay: a call beyond the script, or script steps left over at
:meth:`ScriptedProvider.assert_consumed`, raise :class:`ReplayMismatch` naming the call. Every
request it saw is kept in ``requests`` for assertions.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from active_memory.agents.providers.base import (
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolCall,
)
from active_memory.agents.providers.script_check import ChecksConsumption
from active_memory.errors import ReplayMismatch

__all__ = [
    "ScriptFunction",
    "ScriptStep",
    "ScriptedProvider",
    "answer_response",
    "text_response",
    "tool_call",
    "tool_calls_response",
]

ScriptStep: TypeAlias = ModelResponse | BaseException
ScriptFunction: TypeAlias = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]


class ScriptedProvider(ChecksConsumption):
    """Answers each call with the next scripted step (raising it if it is an exception)."""

    def __init__(self, script: Sequence[ScriptStep] | ScriptFunction) -> None:
        self._function: ScriptFunction | None = None
        self._steps: tuple[ScriptStep, ...] = ()
        if callable(script):
            self._function = script
        else:
            self._steps = tuple(script)
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        number = len(self.requests)
        if self._function is not None:
            result = self._function(request)
            if inspect.isawaitable(result):
                return await result
            return result
        if number > len(self._steps):
            raise ReplayMismatch(
                f"unexpected call #{number} ({request.labels.describe()}): the script has "
                f"only {len(self._steps)} response(s)"
            )
        step = self._steps[number - 1]
        if isinstance(step, BaseException):
            raise step
        return step

    def assert_consumed(self) -> None:
        left = len(self._steps) - len(self.requests)
        if self._function is None and left > 0:
            raise ReplayMismatch(
                f"{left} scripted response(s) were never requested "
                f"(the script has {len(self._steps)}, {len(self.requests)} call(s) made)"
            )


def tool_call(name: str, arguments: Mapping[str, Any] | str, *, id: str = "") -> ToolCall:
    """A tool call; ``arguments`` given as a mapping is encoded, as a string is kept raw."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ToolCall(id=id or f"call_{name}", name=name, arguments=raw)


def tool_calls_response(*calls: ToolCall, usage: TokenUsage | None = None) -> ModelResponse:
    return ModelResponse(tool_calls=calls, stop_reason="tool_use", usage=usage or TokenUsage())


def answer_response(
    answer: Mapping[str, Any] | str,
    *,
    call_id: str | None = None,
    usage: TokenUsage | None = None,
    retries: int = 0,
) -> ModelResponse:
    """A final answer; a mapping is encoded, a string is kept raw (to script malformed JSON)."""
    raw = answer if isinstance(answer, str) else json.dumps(dict(answer))
    return ModelResponse(
        answer=raw,
        answer_call_id=call_id,
        stop_reason="tool_use" if call_id else "end_turn",
        usage=usage or TokenUsage(),
        retries=retries,
    )


def text_response(text: str, *, usage: TokenUsage | None = None) -> ModelResponse:
    return ModelResponse(text=text, usage=usage or TokenUsage())
