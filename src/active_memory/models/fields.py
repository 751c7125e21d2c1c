"""Validation rules the models share, as annotated types: one-line text within a byte limit,
literal paths, identifiers, repository keys, and counted (optionally unique) tuples.

Use them as pydantic metadata or aliases (``title: Annotated[str, OneLine(96)]``,
``files: Annotated[tuple[LiteralPath, ...], Entries(32, unique=True)]``). Each refusal is a
:class:`pydantic_core.PydanticCustomError` whose message is the rule, so the models report it as
``scope.files[2]: 'src/*.py' must be a literal path, not a glob`` (see ``models/base.py``).

The rules themselves are plain functions returning the problem or None; ``one_line`` raises
:class:`~active_memory.errors.LessonValidationError` with the same wording for the few values
checked by hand (a run id given on the command line, say).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from active_memory.errors import LessonValidationError
from active_memory.limits import LIMITS
from active_memory.repository import validate_repository_key

__all__ = [
    "Check",
    "Entries",
    "Identifier",
    "LiteralPath",
    "OneLine",
    "RepositoryKey",
    "identifier_problem",
    "json_type",
    "literal_path_problem",
    "one_line",
    "one_line_problem",
    "utf8_len",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
_GLOB = re.compile(r"[*?\[\]{}]")
_DRIVE = re.compile(r"[A-Za-z]:")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")
# A path every literal path rule accepts: ASCII word segments, none of them '.' or '..'.
_PLAIN_SEGMENT = r"(?!\.\.?(?:/|\Z))[\w.-]+"
_PLAIN_PATH = re.compile(rf"{_PLAIN_SEGMENT}(?:/{_PLAIN_SEGMENT})*", re.ASCII)


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


# -- the rules ---------------------------------------------------------------------------------


def one_line_problem(value: str, max_bytes: int, *, allow_empty: bool = False) -> str | None:
    # Printable ASCII has no control characters and one byte per character, so the common case
    # needs no regex and no encoding; anything else takes the full checks below.
    if (
        value.isascii()
        and value.isprintable()
        and len(value) <= max_bytes
        and (allow_empty or (value and not value.isspace()))
    ):
        return None
    if not allow_empty and not value.strip():
        return "must not be empty"
    if _CONTROL.search(value):
        return "must be one line without control characters"
    size = utf8_len(value)
    if size > max_bytes:
        return f"is {size} UTF-8 bytes; the limit is {max_bytes}"
    return None


def literal_path_problem(path: str) -> str | None:
    """A literal root-relative path: no globs, no ``..``, no leading slash, no empty parts."""
    limit = LIMITS.path_bytes
    if len(path) <= limit and _PLAIN_PATH.fullmatch(path):
        return None  # plain ASCII paths pass every rule below
    problem = one_line_problem(path, limit)
    if problem:
        return problem
    if path.startswith("/") or _DRIVE.match(path):
        return f"{path!r} must be relative to the repository root"
    if "\\" in path:
        return f"{path!r} must use '/' separators"
    if _GLOB.search(path):
        return f"{path!r} must be a literal path, not a glob"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return f"{path!r} must be normalised (no '', '.' or '..' components)"
    return None


def identifier_problem(ident: str) -> str | None:
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    if low <= len(ident) <= high and _IDENTIFIER.fullmatch(ident):
        return None
    return f"{ident!r} must be {low}-{high} characters of [A-Za-z0-9_]"


def _repository_key_problem(value: str) -> str | None:
    try:
        validate_repository_key("", value)
    except LessonValidationError as error:
        return error.problem
    return None


def _entries_problem(
    items: tuple[Any, ...], minimum: int, maximum: int | None, unique: bool
) -> str | None:
    count = len(items)
    if minimum and not (minimum <= count <= (count if maximum is None else maximum)):
        return f"has {count} entries; {minimum} to {maximum} are required"
    if maximum is not None and count > maximum:
        return f"has {count} entries; the limit is {maximum}"
    if unique and count > 1 and len(set(items)) != count:
        seen: set[Any] = set()
        for item in items:
            if item in seen:
                return f"repeats {item!r}; entries must be unique"
            seen.add(item)
    return None


# -- the annotated types -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """Pydantic metadata: after the type is validated, ``rule(value)`` returns the problem (the
    error message) or None. ``code`` is the pydantic error type. ``accept`` is an optional
    pattern whose every full match passes the rule, so the common value skips the Python rule
    (stored rows are validated whenever a store reads them for the first time)."""

    rule: Callable[[Any], str | None]
    code: str = "rule"
    accept: re.Pattern[str] | None = None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.validate, handler(source))

    def validate(self, value: Any) -> Any:
        if self.accept is not None and self.accept.fullmatch(value):
            return value
        problem = self.rule(value)
        if problem:
            raise PydanticCustomError(self.code, problem)
        return value


@dataclass(frozen=True, slots=True)
class OneLine:
    """``Annotated[str, OneLine(96)]``: one non-empty line, no control characters, at most
    ``max_bytes`` UTF-8 bytes (``allow_empty`` lets ``""`` through)."""

    max_bytes: int
    allow_empty: bool = False

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.validate, handler(source))

    def validate(self, value: str) -> str:
        # The common case (printable ASCII within the limit) in this one call; text fields are
        # validated on every stored row a store reads for the first time.
        if (
            value.isascii()
            and value.isprintable()
            and len(value) <= self.max_bytes
            and (self.allow_empty or (value and not value.isspace()))
        ):
            return value
        problem = one_line_problem(value, self.max_bytes, allow_empty=self.allow_empty)
        if problem:
            raise PydanticCustomError("one_line", problem)
        return value


def _list_as_tuple(value: object) -> object:
    return tuple(value) if type(value) is list else value


@dataclass(frozen=True, slots=True)
class Entries:
    """Pydantic metadata for a tuple field: ``maximum`` entries (and ``minimum``, when given),
    optionally ``unique``. A Python list is taken as a tuple (a dict read from JSON holds
    lists); JSON arrays are validated natively."""

    maximum: int | None = None
    minimum: int = 0
    unique: bool = False

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        checked = core_schema.no_info_after_validator_function(self.validate, handler(source))
        return core_schema.json_or_python_schema(
            json_schema=checked,
            python_schema=core_schema.no_info_before_validator_function(_list_as_tuple, checked),
        )

    def validate(self, items: tuple[Any, ...]) -> tuple[Any, ...]:
        count = len(items)
        if self.minimum <= count <= (count if self.maximum is None else self.maximum) and (
            count < 2 or not self.unique or len(set(items)) == count
        ):
            return items
        problem = _entries_problem(items, self.minimum, self.maximum, self.unique)
        if problem:
            raise PydanticCustomError("entries", problem)
        return items


_PLAIN_PATH_WITHIN_LIMIT = re.compile(
    rf"(?=.{{1,{LIMITS.path_bytes}}}\Z){_PLAIN_PATH.pattern}", re.ASCII
)
_WHOLE_IDENTIFIER = re.compile(
    rf"[A-Za-z0-9_]{{{LIMITS.identifier_min_chars},{LIMITS.identifier_max_chars}}}"
)

LiteralPath = Annotated[
    str, Check(literal_path_problem, "literal_path", accept=_PLAIN_PATH_WITHIN_LIMIT)
]
"""A literal root-relative path (``src/app.py``) within the path byte limit."""

Identifier = Annotated[str, Check(identifier_problem, "identifier", accept=_WHOLE_IDENTIFIER)]
"""A whole code identifier: 3-128 characters of ``[A-Za-z0-9_]``."""

RepositoryKey = Annotated[str, Check(_repository_key_problem, "repository_key")]
"""A credential-free repository key: ``forge:host/owner/repo``, ``local:<hex>`` or
``repo:<name>``."""


# -- hand validation (LessonValidationError naming the field) ----------------------------------


def one_line(field_name: str, value: object, max_bytes: int, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise LessonValidationError(field_name, f"must be a string, got {type(value).__name__}")
    problem = one_line_problem(value, max_bytes, allow_empty=allow_empty)
    if problem:
        raise LessonValidationError(field_name, problem)
    return value


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
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
