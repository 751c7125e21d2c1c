"""How many output tokens a turn may need: the answer's maximum serialized size, from its contract.

:func:`max_serialized_bytes` walks a strict JSON Schema and returns the largest answer that can
satisfy it, in UTF-8 bytes as ``json.dumps(answer, ensure_ascii=False)`` writes it, or None
when nothing bounds it (an array without ``maxItems``, a string without ``maxLength``). The
wire contracts carry no size keywords (strict provider modes refuse several of them), so the
caller may supply the limits admission enforces as ``bounds``, keyed by the property path with
``*`` for an array's items (``decisions/*/reason``); a keyword in the schema wins over the
table. :func:`answer_bounds` is that table for the specialists, built from
:data:`active_memory.limits.LIMITS`, with the supplied lesson count as the maintenance answer's
item count (one decision per supplied id).

:func:`tokens_for_bytes` turns bytes into tokens with :data:`BYTES_PER_TOKEN` = 2, half the
~4 bytes a token averages on English text: JSON full of paths, ids and punctuation tokenizes
worse than prose, and a cap too low cuts a legitimate answer, while one too high only lets a
looping turn run a little longer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from active_memory.limits import LIMITS

__all__ = [
    "ANSWER_SLACK_TOKENS",
    "BYTES_PER_TOKEN",
    "answer_bounds",
    "max_serialized_bytes",
    "tokens_for_bytes",
]

BYTES_PER_TOKEN = 2
# The wrapper a provider puts around the answer (a tool call's name and id, a fence) and the
# whitespace a model may add between tokens.
ANSWER_SLACK_TOKENS = 256
# A schema ``maxLength`` counts characters; a character is at most 4 UTF-8 bytes.
_UTF8_MAX = 4
# The longest integer JSON writes for a 64-bit value, sign included.
_NUMBER_BYTES = 20
_LESSON_ID_BYTES = len("lesson-") + 26
_SEPARATOR = len(", ")
_KEY_SEPARATOR = len(": ")


def tokens_for_bytes(size: int) -> int:
    """Tokens ``size`` bytes of answer may take, at the conservative :data:`BYTES_PER_TOKEN`."""
    return -(-size // BYTES_PER_TOKEN)


def max_serialized_bytes(schema: Mapping[str, Any], bounds: Mapping[str, int] = {}) -> int | None:
    """The largest serialized size of a value ``schema`` admits, or None when it is unbounded.

    Strict contracts list every property as required, so an object's size is all of them.
    String bounds are in bytes (a table value, or ``maxLength`` × 4); escapes are not counted
    (the contracts' strings are one line of text, and :data:`BYTES_PER_TOKEN` absorbs the few
    escaped quotes).
    """
    return _size(schema, "", bounds)


def _size(schema: Mapping[str, Any], path: str, bounds: Mapping[str, int]) -> int | None:
    if "const" in schema:
        return _encoded(schema["const"])
    if "enum" in schema:
        return max(_encoded(value) for value in schema["enum"])
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return _largest(_size(branch, path, bounds) for branch in branches)
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return _largest(_typed(str(one), schema, path, bounds) for one in kinds)


def _typed(
    kind: str, schema: Mapping[str, Any], path: str, bounds: Mapping[str, int]
) -> int | None:
    if kind == "null":
        return len("null")
    if kind == "boolean":
        return len("false")
    if kind in ("integer", "number"):
        return _NUMBER_BYTES
    if kind == "string":
        limit = schema.get("maxLength")
        content = limit * _UTF8_MAX if isinstance(limit, int) else bounds.get(path)
        return None if content is None else content + 2
    if kind == "array":
        return _array(schema, path, bounds)
    if kind == "object":
        return _object(schema, path, bounds)
    return None


def _array(schema: Mapping[str, Any], path: str, bounds: Mapping[str, int]) -> int | None:
    count = schema.get("maxItems")
    if not isinstance(count, int):
        count = bounds.get(path)
    if count == 0:
        return len("[]")
    items = schema.get("items")
    if count is None or not isinstance(items, Mapping):
        return None
    item = _size(items, _join(path, "*"), bounds)
    if item is None:
        return None
    return 2 + count * item + (count - 1) * _SEPARATOR


def _object(schema: Mapping[str, Any], path: str, bounds: Mapping[str, int]) -> int | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    if not properties:
        return len("{}")
    total = 2 + (len(properties) - 1) * _SEPARATOR
    for name, child in properties.items():
        value = _size(child, _join(path, name), bounds)
        if value is None:
            return None
        total += _encoded(name) + _KEY_SEPARATOR + value
    return total


def _largest(sizes: Iterable[int | None]) -> int | None:
    found = list(sizes)
    if not found:
        return None
    largest = 0
    for size in found:
        if size is None:
            return None
        largest = max(largest, size)
    return largest


def _encoded(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def _join(path: str, part: str) -> str:
    return f"{path}/{part}" if path else part


def _card(prefix: str) -> dict[str, int]:
    """A card's fields and its associations, under ``prefix`` (graph cards ignore the latter:
    their associations are null)."""
    return {
        f"{prefix}/title": LIMITS.title_bytes,
        f"{prefix}/recommendation": LIMITS.recommendation_bytes,
        f"{prefix}/associations/files": LIMITS.files,
        f"{prefix}/associations/files/*": LIMITS.path_bytes,
        f"{prefix}/associations/folders": LIMITS.folders,
        f"{prefix}/associations/folders/*": LIMITS.path_bytes,
        f"{prefix}/associations/identifiers": LIMITS.identifiers,
        f"{prefix}/associations/identifiers/*": LIMITS.identifier_max_chars,
        f"{prefix}/associations/keyword_groups": LIMITS.keyword_groups,
        f"{prefix}/associations/keyword_groups/*": LIMITS.keyword_group_max_terms,
        f"{prefix}/associations/keyword_groups/*/*": LIMITS.keyword_max_chars,
    }


def _cited(prefix: str) -> dict[str, int]:
    return {
        f"{prefix}/reason": LIMITS.reason_bytes,
        f"{prefix}/references": LIMITS.references_max,
        f"{prefix}/references/*": LIMITS.reference_bytes,
    }


def answer_bounds(*, maintenance: bool, supplied: int) -> dict[str, int]:
    """The limits admission enforces on a specialist's answer, keyed for
    :func:`max_serialized_bytes`. A maintenance answer decides exactly the ``supplied``
    lessons; a discovery answer may propose any number, so its size stays unbounded."""
    if maintenance:
        return {
            "decisions": supplied,
            "decisions/*/id": _LESSON_ID_BYTES,
            **_cited("decisions/*"),
            **_card("decisions/*/replacement"),
        }
    return {
        "lessons/*/node_id": LIMITS.node_id_bytes,
        **_cited("lessons/*"),
        **_card("lessons/*"),
    }
