"""Output modes: how an adapter asks for the final answer without suppressing investigation.

Three modes, as mature agent libraries offer them; every adapter speaks all three:

* ``tool``: the answer is a tool whose input schema is the contract, offered beside the
  investigation tools on every turn; on the final turn it is the only way out. The default
  wherever tools and forced JSON do not mix: OpenAI-compatible servers with grammar-constrained
  decoding (llama.cpp, vLLM's guided decoding) turn a JSON-schema ``response_format`` into a
  grammar that leaves no room for a tool call, so a session sent both never investigates.
* ``native``: the API's own structured output (``response_format`` on Chat Completions,
  ``output_config.format`` on the Messages API). Sent on every turn only where the provider
  documents it alongside tools (OpenAI, Azure, Anthropic); on a compatible server only on the
  final turn, with the tools withdrawn.
* ``prompted``: no schema on the wire at all; the system prompt asks for the JSON object and
  the session's repair turn corrects it. For servers that support neither.

In the ``native`` and ``prompted`` modes text without tool calls is the answer (one code fence
around it is taken off, :func:`unfenced`), malformed or not: the session validates it and
repairs it once. In the ``tool`` mode such text is the answer only when it holds a JSON object
(:func:`json_text`), so a model that writes its answer instead of calling the tool is still
heard, while prose ("let me look") is not mistaken for one. Both wire modules apply these rules
through :func:`text_answer`. Where text-form calls are on (the compatible lane by default), a
reply that is only a call written as JSON text is then read as that call instead
(``text_calls.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from active_memory.agents.providers.base import OUTPUT_MODES, AnswerContract, OutputMode
from active_memory.errors import ConfigError

__all__ = [
    "ANSWER_DESCRIPTION",
    "check_output",
    "json_object",
    "json_text",
    "prompted_system",
    "text_answer",
    "unfenced",
]

ANSWER_DESCRIPTION = (
    "Give your final answer. Call this once, when your investigation is complete; "
    "its input is the whole answer."
)

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*?)\n?```\s*$", re.DOTALL)


def check_output(output: str | None) -> OutputMode | None:
    """``output`` as an output mode; ConfigError naming the modes otherwise."""
    if output is None:
        return None
    for mode in OUTPUT_MODES:
        if output == mode:
            return mode
    raise ConfigError(
        "output", f"{output!r} is not an output mode; use one of {', '.join(OUTPUT_MODES)}"
    )


def prompted_system(system: str, contract: AnswerContract) -> str:
    """The system prompt with the answer instruction of the ``prompted`` mode appended."""
    schema = json.dumps(dict(contract.schema), indent=2, sort_keys=True)
    instruction = (
        f"When your investigation is complete, reply with your {contract.name} answer: one "
        "JSON object and nothing else (no prose, no code fence), satisfying this JSON "
        f"Schema:\n```json\n{schema}\n```"
    )
    return f"{system}\n\n{instruction}" if system else instruction


def unfenced(text: str) -> str:
    """``text`` without the one code fence around it, if it has one."""
    fenced = _FENCE.match(text)
    return fenced.group("body").strip() if fenced else text


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` is, maybe inside one code fence; None for anything else (prose
    around it, several objects, another JSON value, no JSON at all)."""
    candidate = unfenced(text).strip()
    if not candidate.startswith("{"):
        return None
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def json_text(text: str) -> str | None:
    """``text`` as answer JSON when it is a JSON object, maybe inside one code fence."""
    return unfenced(text).strip() if json_object(text) is not None else None


def text_answer(text: str, output: OutputMode) -> str | None:
    """The answer in the text of a turn without tool calls: in the ``tool`` mode only a JSON
    object (:func:`json_text`), in the ``native`` and ``prompted`` modes the text itself, less
    one code fence (:func:`unfenced`)."""
    return json_text(text) if output == "tool" else unfenced(text)
