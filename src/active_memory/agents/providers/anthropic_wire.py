"""Conversion between the toolkit's types and the Anthropic Messages API wire shapes.

While investigating, the model may call any tool (``tool_choice: auto``). The answer follows
the adapter's output mode (``output.py``):

* ``tool`` (the default): the answer is a tool whose ``input_schema`` is the contract. When
  investigation is over the answer is forced with ``tool_choice: {"type": "tool", "name":
  contract}``; the API refuses forced tool use while thinking is on, so with an effort set the
  answer tool stays allowed (``auto``) and the session's final instruction asks for it.
* ``native``: structured output, ``output_config.format = {"type": "json_schema", "schema"}``,
  which the API documents beside tools, on every turn; the text of a turn without tool calls is
  the answer, and the final turn sends ``tool_choice: {"type": "none"}``.
* ``prompted``: no schema on the wire; the system prompt asks for the JSON, and the final turn
  sends ``tool_choice: {"type": "none"}``.

Effort maps to ``output_config.effort`` with adaptive thinking; ``none`` turns thinking off.

Prompt caching: the API caches a request's prefix (tools, then system, then messages) up to each
block marked with ``cache_control``. Two breakpoints are set: on the system prompt, which with
the tools before it is the same on every turn and every run of a specialist (the prompts are
laid out for it, ``agents/prompts.py``), and on the last block of the conversation, so the next
turn of a tool loop reads everything up to its new messages from the cache. The mark moves with
the conversation's end: the marks are not part of what is cached, and the API looks for a cached
prefix at the block boundaries before a mark (about twenty blocks back), so the previous turn's
end, one turn's blocks ago, is found.
SDK types appear only under ``TYPE_CHECKING`` and in :func:`parse_message`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.base import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    OutputMode,
    ReasoningBlock,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from active_memory.agents.providers.output import (
    ANSWER_DESCRIPTION,
    prompted_system,
    text_answer,
)
from active_memory.errors import ConfigError

if TYPE_CHECKING:
    from anthropic.types import Message

__all__ = ["ANTHROPIC_EFFORTS", "CACHE_CONTROL", "build_params", "effort_params", "parse_message"]

ANTHROPIC_EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")
# The default five-minute cache: a postmortem's sessions run within minutes of each other.
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
# The API refuses a cache breakpoint on a thinking block.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})

_STOP_REASONS: dict[str | None, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


def effort_params(effort: str | None) -> dict[str, Any]:
    """The Messages API reasoning controls for a binding's effort."""
    if effort is None:
        return {}
    if effort == "none":
        return {"thinking": {"type": "disabled"}}
    if effort in ANTHROPIC_EFFORTS:
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}
    raise ConfigError(
        "binding.effort",
        f"{effort!r} is not an Anthropic effort; use one of {', '.join(ANTHROPIC_EFFORTS)} "
        "or leave it unset for the model's default",
    )


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _assistant_blocks(message: AssistantMessage, answer_tool: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.reasoning:
        if block.kind == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": block.content})
        else:
            blocks.append(
                {"type": "thinking", "thinking": block.content, "signature": block.signature}
            )
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": _tool_input(call.arguments),
            }
        )
    if message.answer is not None and message.answer_call_id is not None:
        blocks.append(
            {
                "type": "tool_use",
                "id": message.answer_call_id,
                "name": answer_tool,
                "input": _tool_input(message.answer),
            }
        )
    elif message.answer is not None:
        blocks.append({"type": "text", "text": message.answer})
    return blocks


def _messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Alternating user/assistant turns; tool results lead their user turn, as the API wants."""
    turns: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []

    def flush_user() -> None:
        if results or texts:
            turns.append({"role": "user", "content": [*results, *texts]})
            results.clear()
            texts.clear()

    for message in request.messages:
        if isinstance(message, UserMessage):
            texts.append({"type": "text", "text": message.text})
        elif isinstance(message, ToolResult):
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": message.call_id,
                    "content": message.content,
                    "is_error": message.is_error,
                }
            )
        else:
            blocks = _assistant_blocks(message, request.contract.name)
            if blocks:
                flush_user()
                turns.append({"role": "assistant", "content": blocks})
    flush_user()
    return turns


def _mark_conversation_end(turns: list[dict[str, Any]]) -> None:
    """A cache breakpoint on the conversation's last markable block (see the module doc)."""
    for turn in reversed(turns):
        for block in reversed(turn["content"]):
            if block["type"] not in _UNMARKABLE:
                block["cache_control"] = dict(CACHE_CONTROL)
                return


def build_params(request: ModelRequest, output: OutputMode = "tool") -> dict[str, Any]:
    """Keyword arguments for ``messages.create``."""
    reasoning = effort_params(request.effort)
    thinking = reasoning.get("thinking", {}).get("type") == "adaptive"
    contract = request.contract
    tools: list[dict[str, Any]] = [
        {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
        for tool in request.tools
    ]
    choice: dict[str, Any] = {"type": "auto"}
    system = request.system
    if output == "tool":
        tools.append(
            {
                "name": contract.name,
                "description": contract.description or ANSWER_DESCRIPTION,
                "input_schema": dict(contract.schema),
            }
        )
        if request.final and not thinking:
            choice = {"type": "tool", "name": contract.name}
    else:
        if output == "native":
            schema = {"type": "json_schema", "schema": dict(contract.schema)}
            reasoning["output_config"] = {**reasoning.get("output_config", {}), "format": schema}
        else:
            system = prompted_system(system, contract)
        if request.final:
            choice = {"type": "none"}
    messages = _messages(request)
    _mark_conversation_end(messages)
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
        **reasoning,
    }
    if tools:
        params["tools"] = tools
        params["tool_choice"] = choice
    if system:
        # The breakpoint covers the tools too: they come before the system prompt in the prefix.
        params["system"] = [{"type": "text", "text": system, "cache_control": dict(CACHE_CONTROL)}]
    return params


def _usage(message: Message) -> TokenUsage:
    usage = message.usage
    cache_write = usage.cache_creation_input_tokens or 0
    cache_read = usage.cache_read_input_tokens or 0
    return TokenUsage(
        input_tokens=usage.input_tokens + cache_write + cache_read,
        output_tokens=usage.output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def parse_message(
    message: Message, answer_tool: str, retries: int, output: OutputMode = "tool"
) -> ModelResponse:
    """A Messages API response in the toolkit's terms.

    The first answer-tool call is the answer; without tool calls, the text is the answer in the
    native and prompted modes, and in the tool mode when it holds a JSON object.
    """
    from anthropic.types import RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock

    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[ReasoningBlock] = []
    answer: str | None = None
    answer_call_id: str | None = None
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(block.input, ensure_ascii=False)
            if block.name == answer_tool and answer is None:
                answer, answer_call_id = arguments, block.id
            else:
                calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments))
        elif isinstance(block, ThinkingBlock):
            reasoning.append(ReasoningBlock("thinking", block.thinking, block.signature))
        elif isinstance(block, RedactedThinkingBlock):
            reasoning.append(ReasoningBlock("redacted_thinking", block.data))
    text = "".join(texts)
    if answer is None and text and not calls:
        answer = text_answer(text, output)
        text = "" if answer is not None else text
    return ModelResponse(
        text=text,
        tool_calls=tuple(calls),
        answer=answer,
        answer_call_id=answer_call_id,
        reasoning=tuple(reasoning),
        usage=_usage(message),
        stop_reason=_STOP_REASONS.get(message.stop_reason, "other"),
        retries=retries,
        model=message.model,
    )
