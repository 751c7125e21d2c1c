"""JSON forms of requests and responses, for recordings and digests.

A response round-trips exactly (strings are kept byte for byte), so a replayed exchange gives
the same :class:`ModelResponse` and the same answer bytes. A request is stored as a small
projection for people reading a recording; :func:`request_to_dict` is its whole form (deadline
excluded: it differs on every run), which recordings digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from active_memory.agents.providers.base import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ReasoningBlock,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    UserMessage,
)

__all__ = [
    "message_to_dict",
    "request_projection",
    "request_to_dict",
    "response_from_dict",
    "response_to_dict",
]

_STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "refusal", "other")


def _call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _reasoning(block: ReasoningBlock) -> dict[str, Any]:
    return {"kind": block.kind, "content": block.content, "signature": block.signature}


def message_to_dict(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", "text": message.text}
    if isinstance(message, ToolResult):
        return {
            "role": "tool",
            "call_id": message.call_id,
            "name": message.name,
            "content": message.content,
            "is_error": message.is_error,
        }
    assert isinstance(message, AssistantMessage)
    return {
        "role": "assistant",
        "text": message.text,
        "tool_calls": [_call(call) for call in message.tool_calls],
        "answer": message.answer,
        "answer_call_id": message.answer_call_id,
        "reasoning": [_reasoning(block) for block in message.reasoning],
    }


def request_to_dict(request: ModelRequest) -> dict[str, Any]:
    """The whole request except its deadline, as plain JSON data."""
    return {
        "model": request.model,
        "effort": request.effort,
        "max_tokens": request.max_tokens,
        "final": request.final,
        "system": request.system,
        "contract": {
            "name": request.contract.name,
            "description": request.contract.description,
            "schema": dict(request.contract.schema),
        },
        "tools": [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in request.tools
        ],
        "messages": [message_to_dict(message) for message in request.messages],
    }


def request_projection(request: ModelRequest) -> dict[str, Any]:
    """What a reader of a recording needs: settings, tool names and the newest message."""
    last = message_to_dict(request.messages[-1]) if request.messages else None
    return {
        "model": request.model,
        "effort": request.effort,
        "max_tokens": request.max_tokens,
        "final": request.final,
        "contract": request.contract.name,
        "tools": [tool.name for tool in request.tools],
        "messages": len(request.messages),
        "last_message": last,
    }


def response_to_dict(response: ModelResponse) -> dict[str, Any]:
    usage = response.usage
    return {
        "text": response.text,
        "tool_calls": [_call(call) for call in response.tool_calls],
        "answer": response.answer,
        "answer_call_id": response.answer_call_id,
        "reasoning": [_reasoning(block) for block in response.reasoning],
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "stop_reason": response.stop_reason,
        "retries": response.retries,
        "model": response.model,
        # Only when set, so recordings made before text-form calls stay byte for byte.
        **({"text_form": True} if response.text_form else {}),
    }


def response_from_dict(data: Mapping[str, Any]) -> ModelResponse:
    """The inverse of :func:`response_to_dict`; KeyError/TypeError/ValueError on a bad shape."""
    stop_reason = data["stop_reason"]
    if stop_reason not in _STOP_REASONS:
        raise ValueError(f"unknown stop_reason {stop_reason!r}")
    usage = data["usage"]
    return ModelResponse(
        text=str(data["text"]),
        tool_calls=tuple(
            ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"])
            for c in data["tool_calls"]
        ),
        answer=data["answer"],
        answer_call_id=data["answer_call_id"],
        reasoning=tuple(
            ReasoningBlock(kind=b["kind"], content=b["content"], signature=b["signature"])
            for b in data["reasoning"]
        ),
        usage=TokenUsage(
            input_tokens=int(usage["input_tokens"]),
            output_tokens=int(usage["output_tokens"]),
            cache_read_tokens=int(usage["cache_read_tokens"]),
            cache_write_tokens=int(usage["cache_write_tokens"]),
        ),
        stop_reason=cast(StopReason, stop_reason),
        retries=int(data["retries"]),
        model=str(data["model"]),
        text_form=data.get("text_form") is True,
    )
