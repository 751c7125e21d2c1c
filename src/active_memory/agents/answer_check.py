"""Judging a reply against its contract: parse and validate an answer, spot prose where an
answer was due, and the host's own check of a contract-valid answer (:class:`HostCheck`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.agents.providers.base import AnswerContract, ModelResponse

__all__ = ["AnswerCheck", "HostCheck", "check_answer", "not_json", "prose"]

_MAX_LISTED_ERRORS = 20
_MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    """An answer parsed and validated: ``value`` when valid, else the errors, in path order.
    ``items_only`` is the parsed answer when every error lies inside an item of one of its
    top-level lists (``lessons/3/associations``), so the rest of the answer is sound."""

    value: dict[str, Any] | None
    errors: tuple[str, ...] = field(default=())
    items_only: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class HostCheck:
    """A host-side check of a contract-valid answer: ``problems`` lists what the host would
    refuse (lesson ids and codes, never answer text); ``heading`` opens the repair turn that
    carries them."""

    heading: str
    problems: Callable[[dict[str, Any]], tuple[str, ...]]


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "…"


def not_json(raw: str) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return True
    return False


def prose(response: ModelResponse) -> bool:
    """Text alone, with neither an answer nor a tool call: not JSON where an answer was due."""
    return response.answer is None and not response.tool_calls and bool(response.text.strip())


def check_answer(contract: AnswerContract, raw: str) -> AnswerCheck:
    """Parse ``raw`` as JSON and validate it against the contract; never raises."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return AnswerCheck(
            None, (f"the answer is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}",)
        )
    if not isinstance(value, dict):
        return AnswerCheck(None, ("the answer must be a JSON object",))
    validator = Draft202012Validator(dict(contract.schema))
    found = sorted(
        validator.iter_errors(value), key=lambda e: ([str(p) for p in e.absolute_path], e.message)
    )
    if not found:
        return AnswerCheck(value)
    confined = all(
        len(error.absolute_path) >= 2
        and isinstance(error.absolute_path[1], int)
        and isinstance(value.get(str(error.absolute_path[0])), list)
        for error in found
    )
    errors = [
        _short(f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}")
        for error in found[:_MAX_LISTED_ERRORS]
    ]
    if len(found) > _MAX_LISTED_ERRORS:
        errors.append(f"(+{len(found) - _MAX_LISTED_ERRORS} more errors)")
    return AnswerCheck(None, tuple(errors), value if confined else None)
