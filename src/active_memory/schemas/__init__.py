"""JSON Schemas shipped as package data (Draft 2020-12), and a way to name the bad field.

``first_error(name, instance)`` returns the most relevant violation as a dotted path
(``executions[3].node``) and a one-line problem, so loaders can raise an error that points at
the field instead of dumping jsonschema's whole report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

__all__ = ["first_error", "format_path", "load_schema", "validator"]


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The schema ``<name>.schema.json`` from this package, checked against Draft 2020-12."""
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    Draft202012Validator.check_schema(schema)
    return schema


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name))


def format_path(parts: Sequence[str | int]) -> str:
    """``["executions", 3, "node"]`` → ``executions[3].node``; the empty path is ``$``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "$"


def _missing_or_extra(error: ValidationError) -> tuple[str | None, str]:
    """For required/additionalProperties, point at the property itself, not its parent."""
    instance, wanted, schema = error.instance, error.validator_value, error.schema
    if error.validator == "required" and isinstance(instance, dict) and isinstance(wanted, list):
        missing = [key for key in wanted if key not in instance]
        if missing:
            return str(missing[0]), "is required"
    if (
        error.validator == "additionalProperties"
        and isinstance(instance, dict)
        and isinstance(schema, dict)
    ):
        allowed = set(schema.get("properties", {}))
        extra = sorted(key for key in instance if key not in allowed)
        if extra:
            return str(extra[0]), f"is not an allowed field; allowed: {sorted(allowed)}"
    return None, error.message


def first_error(name: str, instance: Any) -> tuple[str, str] | None:
    """The best-matching violation of schema ``name`` as ``(path, problem)``, or None."""
    error = best_match(validator(name).iter_errors(instance))
    if error is None:
        return None
    parts: list[str | int] = list(error.absolute_path)
    leaf, problem = _missing_or_extra(error)
    if leaf is not None:
        parts.append(leaf)
    return format_path(parts), problem
