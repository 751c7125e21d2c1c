"""Validation primitives the models share: one-line text within a byte limit, literal paths,
string tuples, counts, uniqueness, and the required/unknown-key checks of a JSON object.

Each raises :class:`~active_memory.errors.LessonValidationError` naming the field and the rule, so
the lesson models and the runtime configuration report a bad value the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from typing import Any

from active_memory.errors import LessonValidationError
from active_memory.limits import LIMITS

__all__ = [
    "check_count",
    "check_unique",
    "json_type",
    "literal_path",
    "one_line",
    "reject_unknown",
    "require",
    "require_object",
    "tuple_of_str",
    "utf8_len",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
_GLOB = re.compile(r"[*?\[\]{}]")
_DRIVE = re.compile(r"[A-Za-z]:")


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def one_line(field_name: str, value: object, max_bytes: int, *, allow_empty: bool = False) -> str:
    # Printable ASCII has no control characters and one byte per character, so the common case
    # needs no regex and no encoding; anything else takes the full checks below.
    if (
        type(value) is str
        and value.isascii()
        and value.isprintable()
        and len(value) <= max_bytes
        and (allow_empty or value.strip())
    ):
        return value
    if not isinstance(value, str):
        raise LessonValidationError(field_name, f"must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise LessonValidationError(field_name, "must not be empty")
    if _CONTROL.search(value):
        raise LessonValidationError(field_name, "must be one line without control characters")
    size = utf8_len(value)
    if size > max_bytes:
        raise LessonValidationError(field_name, f"is {size} UTF-8 bytes; the limit is {max_bytes}")
    return value


def check_count(field_name: str, items: tuple[Any, ...], maximum: int) -> None:
    if len(items) > maximum:
        raise LessonValidationError(field_name, f"has {len(items)} entries; the limit is {maximum}")


def check_unique(field_name: str, items: Iterable[str]) -> None:
    if isinstance(items, tuple) and (len(items) < 2 or len(set(items)) == len(items)):
        return
    seen: set[str] = set()
    for item in items:
        if item in seen:
            raise LessonValidationError(field_name, f"repeats {item!r}; entries must be unique")
        seen.add(item)


def literal_path(field_name: str, value: object) -> str:
    """A literal root-relative path: no globs, no ``..``, no leading slash, no empty parts."""
    path = one_line(field_name, value, LIMITS.path_bytes)
    if path.startswith("/") or _DRIVE.match(path):
        raise LessonValidationError(field_name, f"{path!r} must be relative to the repository root")
    if "\\" in path:
        raise LessonValidationError(field_name, f"{path!r} must use '/' separators")
    if _GLOB.search(path):
        raise LessonValidationError(field_name, f"{path!r} must be a literal path, not a glob")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise LessonValidationError(
            field_name, f"{path!r} must be normalised (no '', '.' or '..' components)"
        )
    return path


def tuple_of_str(field_name: str, value: object) -> tuple[str, ...]:
    if type(value) is tuple or type(value) is list:
        for item in value:
            if type(item) is not str:
                break
        else:
            return tuple(value)
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise LessonValidationError(field_name, "must be a list of strings")
    for item in value:
        if not isinstance(item, str):
            raise LessonValidationError(field_name, "must be a list of strings")
    return tuple(value)


def require_object(data: object, where: str) -> Mapping[str, Any]:
    # Checked before anything looks at keys: a number has none, a list's items are not fields.
    if not isinstance(data, Mapping):
        raise LessonValidationError(where or "lesson", f"must be an object, got {json_type(data)}")
    return data


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


def require(data: Mapping[str, Any], key: str, where: str) -> Any:
    if type(data) is not dict:
        require_object(data, where)
    if key not in data:
        raise LessonValidationError(f"{where}.{key}" if where else key, "is required")
    return data[key]


def reject_unknown(data: Mapping[str, Any], allowed: Set[str], where: str) -> None:
    if data.keys() <= allowed:
        return
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise LessonValidationError(
            where or "lesson", f"unknown field(s) {unknown}; allowed: {sorted(allowed)}"
        )
