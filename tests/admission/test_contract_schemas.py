from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from active_memory.admission import CONTRACTS, contract_sha256, load_contract, wire_schema

from .builders import decision, graph_discovery, graph_lesson, replacement, repo_discovery

# The keyword subset both OpenAI strict structured output and Anthropic tool input schemas
# document; length, count and pattern keywords stay out (the host enforces them).
PORTABLE_KEYWORDS = {
    "$schema", "type", "properties", "required", "additionalProperties", "items", "enum",
    "description", "anyOf",
}  # fmt: skip


def _schemas(node: Any) -> list[dict[str, Any]]:
    """Every subschema of ``node``, recursively."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for key in ("properties",):
            for child in node.get(key, {}).values():
                found.extend(_schemas(child))
        if "items" in node:
            found.extend(_schemas(node["items"]))
        for child in node.get("anyOf", []):
            found.extend(_schemas(child))
    return found


def _object_depth(node: dict[str, Any]) -> int:
    children = [*node.get("properties", {}).values(), *node.get("anyOf", [])]
    if "items" in node:
        children.append(node["items"])
    declared = node.get("type", [])
    own = 1 if "object" in ([declared] if isinstance(declared, str) else declared) else 0
    return own + max((_object_depth(child) for child in children), default=0)


@pytest.mark.parametrize("name", CONTRACTS)
def test_contract_is_valid_draft_2020_12(name: str) -> None:
    schema = load_contract(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", CONTRACTS)
def test_contract_is_strict_at_every_level(name: str) -> None:
    objects = [s for s in _schemas(load_contract(name)) if s.get("type") == "object"]
    assert objects
    for schema in objects:
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])


@pytest.mark.parametrize("name", CONTRACTS)
def test_contract_uses_only_portable_keywords_and_an_object_root(name: str) -> None:
    schema = load_contract(name)
    assert schema["type"] == "object"
    assert "anyOf" not in schema
    for sub in _schemas(schema):
        assert set(sub) <= PORTABLE_KEYWORDS, set(sub) - PORTABLE_KEYWORDS
    assert _object_depth(schema) <= 5


def test_contract_sha256_is_the_hash_of_the_file_bytes() -> None:
    for name in CONTRACTS:
        data = resources.files("active_memory.admission").joinpath(f"{name}.schema.json")
        assert contract_sha256(name) == hashlib.sha256(data.read_bytes()).hexdigest()
    assert len({contract_sha256(name) for name in CONTRACTS}) == len(CONTRACTS)


def test_load_contract_returns_an_independent_copy() -> None:
    first = load_contract("card")
    first["properties"].clear()
    assert load_contract("card")["properties"]


def test_unknown_contract_name_is_refused_with_the_known_names() -> None:
    with pytest.raises(KeyError, match="repository_discovery"):
        load_contract("graph_discoveries")


def test_wire_schema_drops_only_the_dialect_marker() -> None:
    for name in CONTRACTS:
        wire = wire_schema(name)
        assert "$schema" not in wire
        assert {**wire, "$schema": load_contract(name)["$schema"]} == load_contract(name)


def test_maintenance_replacements_are_cards() -> None:
    card = load_contract("card")
    for name in ("graph_maintenance", "repository_maintenance"):
        item = load_contract(name)["properties"]["decisions"]["items"]
        card_branch = item["properties"]["replacement"]["anyOf"][0]
        assert set(card_branch["properties"]) == set(card["properties"])
    repository = load_contract("repository_maintenance")["properties"]["decisions"]["items"]
    associations = repository["properties"]["replacement"]["anyOf"][0]["properties"]
    assert associations["associations"] == card["properties"]["associations"]["anyOf"][0]


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("repository_discovery", {"lessons": [repo_discovery()]}),
        ("graph_discovery", {"lessons": [graph_discovery()]}),
        ("graph_discovery", {"lessons": []}),
        ("graph_maintenance", {"decisions": [decision(graph_lesson())]}),
        (
            "repository_maintenance",
            {"decisions": [decision(graph_lesson(), "adapt", replacement=replacement())]},
        ),
        ("card", replacement()),
        ("card", {**replacement(), "associations": None}),
    ],
)
def test_well_formed_answers_satisfy_their_contract(name: str, answer: dict[str, Any]) -> None:
    assert list(Draft202012Validator(load_contract(name)).iter_errors(answer)) == []


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("graph_discovery", {"lessons": [repo_discovery()]}),  # associations must be null
        ("repository_discovery", {"lessons": [{**repo_discovery(), "associations": None}]}),
        ("graph_maintenance", {"decisions": [decision(graph_lesson(), "adapt",
                                                      replacement=replacement())]}),
        ("card", {**replacement(), "extra": 1}),
    ],
)  # fmt: skip
def test_answers_for_the_other_scope_do_not_satisfy_the_contract(
    name: str, answer: dict[str, Any]
) -> None:
    assert list(Draft202012Validator(load_contract(name)).iter_errors(answer))
