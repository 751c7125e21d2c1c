"""Conversion between the toolkit's types and OpenAI Chat Completions wire shapes.

Chat Completions, not the Responses API: it is the one shape OpenAI, Azure and
OpenAI-compatible servers (vLLM, llama.cpp's server) all speak, and a session keeps its own
history anyway. The answer follows the adapter's output mode (see ``output.py``); investigation
tools are offered with ``tool_choice: "auto"`` on every turn before the final one:

* ``tool``: the answer is one more strict function tool, named after the contract. The final
  turn forces it: by name on OpenAI and Azure; on a compatible server by offering it alone with
  ``tool_choice: "required"`` (what llama.cpp and vLLM both accept).
* ``native``: strict ``response_format={"type": "json_schema", ...}``; content without tool
  calls is the answer. OpenAI and Azure document it beside tools, so it goes on every request
  and the final turn sends ``tool_choice: "none"``; a compatible server gets it on the final
  turn only, without tools, because a grammar built from it leaves no room for a tool call.
* ``prompted``: nothing on the wire; the system prompt asks for the JSON.

Effort is passed as ``reasoning_effort``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.base import (
    AnswerContract,
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    OutputMode,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from active_memory.agents.providers.output import (
    ANSWER_DESCRIPTION,
    prompted_system,
    text_answer,
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


def _call(id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _assistant(message: AssistantMessage, answer_tool: str) -> dict[str, Any]:
    calls = [_call(call.id, call.name, call.arguments) for call in message.tool_calls]
    if message.answer is not None and message.answer_call_id is not None:
        calls.append(_call(message.answer_call_id, answer_tool, message.answer))
        content = message.text
    else:
        content = message.answer if message.answer is not None else message.text
    wire: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        wire["tool_calls"] = calls
    elif wire["content"] is None:
        wire["content"] = ""
    return wire


def _messages(request: ModelRequest, system: str) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            wire.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResult):
            # Chat Completions has no error flag on tool messages; the prefix carries it.
            content = f"error: {message.content}" if message.is_error else message.content
            wire.append({"role": "tool", "tool_call_id": message.call_id, "content": content})
        else:
            wire.append(_assistant(message, request.contract.name))
    return wire


def _function(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
            "strict": True,
        },
    }


def _tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [_function(t.name, t.description, dict(t.parameters)) for t in tools]


def _answer_tool(contract: AnswerContract) -> dict[str, Any]:
    description = contract.description or ANSWER_DESCRIPTION
    return _function(contract.name, description, dict(contract.schema))


def _response_format(contract: AnswerContract) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {
            "name": contract.name,
            "schema": dict(contract.schema),
            "strict": True,
            **({"description": contract.description} if contract.description else {}),
        },
    }


def _answer_params(request: ModelRequest, output: OutputMode, compatible: bool) -> dict[str, Any]:
    """``tools``, ``tool_choice`` and ``response_format`` for the mode and the turn."""
    tools = _tools(request.tools)
    final, contract = request.final, request.contract
    if output == "tool":
        if final and compatible:
            return {"tools": [_answer_tool(contract)], "tool_choice": "required"}
        choice: Any = "auto"
        if final:
            choice = {"type": "function", "function": {"name": contract.name}}
        return {"tools": [*tools, _answer_tool(contract)], "tool_choice": choice}
    params: dict[str, Any] = {}
    native = output == "native"
    if native and (final or not compatible):
        params["response_format"] = _response_format(contract)
    if tools and not (final and compatible):
        params["tools"] = tools
        params["tool_choice"] = "none" if final else "auto"
    return params


def build_params(
    request: ModelRequest, *, compatible: bool, output: OutputMode = "native"
) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create``.

    Compatible servers get ``max_tokens``; OpenAI and Azure reasoning models only accept
    ``max_completion_tokens``.
    """
    check_effort(request.effort)
    system = request.system
    if output == "prompted":
        system = prompted_system(system, request.contract)
    params: dict[str, Any] = {
        "model": request.model,
        "messages": _messages(request, system),
        ("max_tokens" if compatible else "max_completion_tokens"): request.max_tokens,
        **_answer_params(request, output, compatible),
    }
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


def parse_completion(
    completion: ChatCompletion, retries: int, answer_tool: str, output: OutputMode = "native"
) -> ModelResponse:
    """A chat completion in the toolkit's terms.

    The first call of the answer tool is the answer; without tool calls, content is the answer
    in the native and prompted modes, and in the tool mode when it holds a JSON object.
    """
    if not completion.choices:
        return ModelResponse(
            usage=_usage(completion), stop_reason="other", retries=retries, model=completion.model
        )
    choice = completion.choices[0]
    message = choice.message
    calls: list[ToolCall] = []
    answer: str | None = None
    answer_call_id: str | None = None
    for call in message.tool_calls or ():
        if call.type != "function":
            continue
        if call.function.name == answer_tool and answer is None:
            answer, answer_call_id = call.function.arguments, call.id
        else:
            calls.append(ToolCall(call.id, call.function.name, call.function.arguments))
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
    if answer is None and content and not calls:
        answer = text_answer(content, output)
    return ModelResponse(
        text="" if answer is not None and answer_call_id is None else content,
        tool_calls=tuple(calls),
        answer=answer,
        answer_call_id=answer_call_id,
        usage=_usage(completion),
        stop_reason=stop_reason,
        retries=retries,
        model=completion.model,
    )
