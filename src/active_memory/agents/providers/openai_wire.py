"""Conversion between the toolkit's types and OpenAI Chat Completions wire shapes.

Chat Completions, not the Responses API: it is the one shape OpenAI, Azure and
OpenAI-compatible servers (vLLM, llama.cpp's server) all speak, and a session keeps its own
history anyway. The final answer is strict structured output: every request carries
``response_format={"type": "json_schema", "json_schema": {name, schema, strict: true}}``, so any
assistant content that comes without tool calls is the answer. When investigation is over,
``tool_choice: "none"`` leaves the answer as the only way out. Effort is passed as
``reasoning_effort``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.base import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from active_memory.errors import ConfigError

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

__all__ = ["OPENAI_EFFORTS", "build_params", "check_effort", "parse_completion"]

OPENAI_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

_STOP_REASONS: dict[str | None, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def check_effort(effort: str | None) -> None:
    if effort is not None and effort not in OPENAI_EFFORTS:
        raise ConfigError(
            "binding.effort",
            f"{effort!r} is not an OpenAI reasoning effort; use one of "
            f"{', '.join(OPENAI_EFFORTS)} or leave it unset for the model's default",
        )


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    content = message.answer if message.answer is not None else message.text
    wire: dict[str, Any] = {"role": "assistant", "content": content or None}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    elif wire["content"] is None:
        wire["content"] = ""
    return wire


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": request.system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            wire.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResult):
            # Chat Completions has no error flag on tool messages; the prefix carries it.
            content = f"error: {message.content}" if message.is_error else message.content
            wire.append({"role": "tool", "tool_call_id": message.call_id, "content": content})
        else:
            wire.append(_assistant(message))
    return wire


def build_params(request: ModelRequest, *, compatible: bool) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create``.

    Compatible servers get ``max_tokens``; OpenAI and Azure reasoning models only accept
    ``max_completion_tokens``.
    """
    check_effort(request.effort)
    contract = request.contract
    params: dict[str, Any] = {
        "model": request.model,
        "messages": _messages(request),
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": contract.name,
                "schema": dict(contract.schema),
                "strict": True,
                **({"description": contract.description} if contract.description else {}),
            },
        },
        ("max_tokens" if compatible else "max_completion_tokens"): request.max_tokens,
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                    "strict": True,
                },
            }
            for tool in request.tools
        ]
        params["tool_choice"] = "none" if request.final else "auto"
    if request.effort is not None:
        params["reasoning_effort"] = request.effort
    return params


def _usage(completion: ChatCompletion) -> TokenUsage:
    usage = completion.usage
    if usage is None:
        return TokenUsage()
    details = usage.prompt_tokens_details
    return TokenUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=(details.cached_tokens or 0) if details else 0,
        cache_write_tokens=(details.cache_write_tokens or 0) if details else 0,
    )


def parse_completion(completion: ChatCompletion, retries: int) -> ModelResponse:
    """A chat completion in the toolkit's terms: content without tool calls is the answer."""
    if not completion.choices:
        return ModelResponse(
            usage=_usage(completion), stop_reason="other", retries=retries, model=completion.model
        )
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
        for call in message.tool_calls or ()
        if call.type == "function"
    )
    stop_reason = _STOP_REASONS.get(choice.finish_reason, "other")
    if message.refusal:
        return ModelResponse(
            text=message.refusal,
            usage=_usage(completion),
            stop_reason="refusal",
            retries=retries,
            model=completion.model,
        )
    content = message.content or ""
    answer = content if content and not calls else None
    return ModelResponse(
        text="" if answer is not None else content,
        tool_calls=calls,
        answer=answer,
        usage=_usage(completion),
        stop_reason=stop_reason,
        retries=retries,
        model=completion.model,
    )
