"""``contracts check`` refuses keywords outside the providers' common subset and deep nesting."""

from __future__ import annotations

from typing import Any

from active_memory.admission import CONTRACTS, load_contract
from active_memory.admission.check import DRAFT_2020_12, KEYWORDS, problems


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": sorted(properties),
            "additionalProperties": False}  # fmt: skip


def test_every_shipped_contract_stays_inside_the_subset() -> None:
    for name in CONTRACTS:
        assert problems(load_contract(name)) == (), name


def test_a_length_limit_is_refused_where_it_stands() -> None:
    schema = {"$schema": DRAFT_2020_12, **_object({"title": {"type": "string", "maxLength": 9}})}
    assert problems(schema) == (
        "$.properties.title: keyword 'maxLength' is outside the subset both providers accept "
        f"({', '.join(sorted(KEYWORDS))})",
    )


def test_a_property_named_like_a_keyword_is_only_a_name() -> None:
    schema = {"$schema": DRAFT_2020_12, **_object({"pattern": {"type": "string"}})}
    assert problems(schema) == ()


def test_dollar_schema_is_allowed_only_at_the_root() -> None:
    inner = {"$schema": DRAFT_2020_12, "type": "string"}
    schema = {"$schema": DRAFT_2020_12, **_object({"a": inner})}
    assert [p.split(":")[0] for p in problems(schema)] == ["$.properties.a"]


def test_five_levels_of_objects_are_too_deep() -> None:
    leaf: dict[str, Any] = {"type": "string"}
    for _ in range(5):
        leaf = _object({"x": leaf})
    schema = {"$schema": DRAFT_2020_12, **leaf}
    assert problems(schema) == (
        "$.properties.x.properties.x.properties.x.properties.x: objects are nested more than "
        "4 levels deep",
    )
