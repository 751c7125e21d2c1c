"""Text-form tool calls: a small model's call written as JSON text, taken as the call it names.

Small models behind OpenAI-compatible servers (Qwen2.5-Coder 1.5B on llama.cpp's server, for
one) often write a tool call as the whole of their reply, ``{"name": "list_folder",
"arguments": {...}}``, fenced or not, which the server does not return as a call: a session
that takes it for text never investigates. :func:`take_text_call` reads such a reply as the call
it names, and nothing else:

* the reply (less one code fence, :func:`~.output.unfenced`) is exactly one JSON object with
  ``name`` and ``arguments`` (or ``parameters``, as Llama models write it) and no other key;
  ``arguments`` is an object or the JSON text of one;
* ``name`` is a tool the request offers: an investigation tool on a turn that is not final, or
  the answer tool in the ``tool`` output mode;
* the arguments validate against the tool's input schema, a property it omits counting as null
  where the schema allows null (how strict schemas spell "optional").

Prose around the object, several objects, an unknown or withdrawn tool or invalid arguments
leave the reply as it was. A call to the answer tool becomes the answer, whatever it holds:
the session validates every answer and repairs it once, as for the answer tool itself. The call
id is synthetic and stable (a digest of the turn and the call), so a recorded session replays.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.agents.providers.base import ModelRequest, ModelResponse, OutputMode, ToolCall
from active_memory.agents.providers.output import json_object

__all__ = ["TEXT_CALL_PREFIX", "take_text_call"]

TEXT_CALL_PREFIX = "textcall_"
_ARGUMENT_KEYS = ("arguments", "parameters")


def _written(response: ModelResponse) -> str | None:
    """What the model wrote as the whole of a turn without calls: its text, or the text an
    adapter already took as the answer (a JSON object in the tool mode, any text otherwise)."""
    if response.tool_calls or response.answer_call_id is not None:
        return None
    if response.answer is not None:
        return response.answer
    return response.text or None


def _parsed_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` when ``text`` is one call object and nothing else."""
    value = json_object(text)
    if value is None or not isinstance(value.get("name"), str):
        return None
    keys = [key for key in _ARGUMENT_KEYS if key in value]
    if len(keys) != 1 or set(value) != {"name", keys[0]}:
        return None
    arguments = value[keys[0]]
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return value["name"], arguments


def _nullable(rule: object) -> bool:
    """Whether a property's schema says null outright: ``"type"`` naming it, or one ``anyOf``
    branch that does (how strict schemas and pydantic spell an optional property)."""
    if not isinstance(rule, Mapping):
        return False
    kind = rule.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    branches = rule.get("anyOf")
    return isinstance(branches, list) and any(_nullable(branch) for branch in branches)


def _completed(schema: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any] | None:
    """``arguments`` with each omitted nullable property set to null, when they then validate
    against ``schema``; None when they do not."""
    filled = dict(arguments)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, rule in properties.items():
            if name not in filled and _nullable(rule):
                filled[name] = None
    return filled if Draft202012Validator(dict(schema)).is_valid(filled) else None


def _call_id(request: ModelRequest, name: str, arguments: str) -> str:
    labels = request.labels
    seed = f"{labels.specialist}\0{labels.batch}\0{labels.turn}\0{name}\0{arguments}"
    return TEXT_CALL_PREFIX + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


def take_text_call(
    response: ModelResponse, request: ModelRequest, output: OutputMode
) -> ModelResponse:
    """``response`` with a text-form call taken as the call it names (``text_form`` set), or
    ``response`` unchanged when its text is no such call."""
    written = _written(response)
    parsed = _parsed_call(written) if written is not None else None
    if parsed is None:
        return response
    name, arguments = parsed
    contract = request.contract
    if name == contract.name and output == "tool":
        answer = json.dumps(arguments, ensure_ascii=False)
        return replace(
            response,
            text="",
            answer=answer,
            answer_call_id=_call_id(request, name, answer),
            stop_reason="tool_use",
            text_form=True,
        )
    offered = {} if request.final else {tool.name: tool for tool in request.tools}
    tool = offered.get(name)
    completed = _completed(tool.parameters, arguments) if tool is not None else None
    if completed is None:
        return response
    text = json.dumps(completed, ensure_ascii=False)
    call = ToolCall(_call_id(request, name, text), name, text)
    return replace(
        response,
        text="",
        tool_calls=(call,),
        answer=None,
        stop_reason="tool_use",
        text_form=True,
    )
