"""The answer's maximum serialized size, from its contract, and its cost in tokens."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.admission import wire_schema
from active_memory.agents.output_bounds import (
    BYTES_PER_TOKEN,
    answer_bounds,
    max_serialized_bytes,
    tokens_for_bytes,
)
from active_memory.limits import LIMITS

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 5},
                    "kind": {"type": "string", "enum": ["a", "longest"]},
                    "done": {"type": "boolean"},
                    "note": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]},
                },
            },
        },
        "label": {"type": "string"},
    },
}


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def test_the_bound_is_the_size_of_the_largest_value_the_schema_admits() -> None:
    # maxLength counts characters: the largest is 4-byte characters throughout.
    item = {"name": "😀" * 5, "kind": "longest", "done": False, "note": "😀" * 2}
    largest = {"items": [item] * 3, "label": "x" * 40}

    bound = max_serialized_bytes(SCHEMA, {"label": 40})

    assert bound == _size(largest)


def test_a_list_or_text_without_a_limit_leaves_the_answer_unbounded() -> None:
    assert max_serialized_bytes(SCHEMA) is None  # "label" has no limit anywhere
    unbounded_list = {"type": "object", "properties": {"xs": {"type": "array", "items": {}}}}
    assert max_serialized_bytes(unbounded_list) is None


def test_a_limit_in_the_schema_wins_over_the_table() -> None:
    with_table = max_serialized_bytes(SCHEMA, {"label": 40, "items": 100, "items/*/name": 1})
    assert with_table == max_serialized_bytes(SCHEMA, {"label": 40})


def test_tokens_are_counted_at_two_bytes_each_rounded_up() -> None:
    assert BYTES_PER_TOKEN == 2
    assert [tokens_for_bytes(size) for size in (0, 1, 2, 5)] == [0, 1, 1, 3]


def _largest_graph_decision() -> dict[str, Any]:
    return {
        "id": "lesson-" + "0" * 26,
        "action": "retire",
        "reason": "r" * LIMITS.reason_bytes,
        "references": ["x" * LIMITS.reference_bytes] * LIMITS.references_max,
        "replacement": {
            "title": "t" * LIMITS.title_bytes,
            "recommendation": "c" * LIMITS.recommendation_bytes,
            "associations": None,
        },
    }


def test_a_graph_maintenance_answer_at_every_limit_is_exactly_the_bound() -> None:
    schema = wire_schema("graph_maintenance")
    largest = {"decisions": [_largest_graph_decision()] * 3}
    assert not list(Draft202012Validator(schema).iter_errors(largest))

    bound = max_serialized_bytes(schema, answer_bounds(maintenance=True, supplied=3))

    assert bound == _size(largest)


def test_the_maintenance_bound_grows_with_the_supplied_lessons_and_discovery_has_none() -> None:
    schema = wire_schema("repository_maintenance")
    one, four = (
        max_serialized_bytes(schema, answer_bounds(maintenance=True, supplied=count))
        for count in (1, 4)
    )
    assert one is not None
    assert four is not None
    assert four == 4 * one + 3 * len(", ") - 3 * len('{"decisions": []}')
    for name in ("graph_discovery", "repository_discovery"):
        bounds = answer_bounds(maintenance=False, supplied=0)
        assert max_serialized_bytes(wire_schema(name), bounds) is None
