from __future__ import annotations

import hashlib
from typing import Any, get_args

import pytest
from jsonschema import Draft202012Validator

from active_memory.admission import CONTRACTS, contract_sha256, load_contract, wire_schema
from active_memory.data_folders import shipped_folder
from active_memory.limits import LIMITS
from active_memory.models.changes import Decision, DecisionAction, Proposal
from active_memory.models.lessons import Card, Evidence, GraphScope, RepositoryScope

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
        data = shipped_folder("contracts").joinpath(f"{name}.schema.json")
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


# -- the contracts and the lesson models name the same fields ---------------------------------
# A specialist writes a card's text and associations; the host adds what it owns: the scope's
# kind and repository, the graph hash, the run id and the source commit.
CARD_TEXT = set(Card.model_fields) - {"scope"}
ASSOCIATIONS = set(RepositoryScope.model_fields) - {"kind", "repository"}
HOST_EVIDENCE = {"run_id", "source_commit"}


def _association_objects(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object branches of an ``associations`` property (a graph lesson's is only null)."""
    associations = node["properties"]["associations"]
    branches = associations.get("anyOf", [associations])
    objects = [branch for branch in branches if branch.get("type") == "object"]
    for branch in objects:
        assert set(branch["properties"]) == ASSOCIATIONS
    return objects


def test_the_model_field_sets_compared_below_are_the_expected_ones() -> None:
    assert {"title", "recommendation"} == CARD_TEXT
    assert {"files", "folders", "identifiers", "keyword_groups"} == ASSOCIATIONS
    assert set(Evidence.model_fields) - HOST_EVIDENCE == {"references", "reason"}


def test_the_card_contract_has_the_card_model_fields() -> None:
    card = load_contract("card")
    assert set(card["properties"]) == CARD_TEXT | {"associations"}
    assert len(_association_objects(card)) == 1


@pytest.mark.parametrize(
    ("name", "associated"), [("repository_discovery", 1), ("graph_discovery", 0)]
)
def test_a_discovered_lesson_has_the_card_evidence_and_proposal_fields(
    name: str, associated: int
) -> None:
    item = load_contract(name)["properties"]["lessons"]["items"]
    proposal = set(Proposal.model_fields) - {"draft"}
    evidence = set(Evidence.model_fields) - HOST_EVIDENCE
    assert set(item["properties"]) == CARD_TEXT | {"associations"} | evidence | proposal
    assert len(_association_objects(item)) == associated
    assert "node_id" in GraphScope.model_fields  # the proposal's node becomes the scope's


@pytest.mark.parametrize(
    ("name", "associated"), [("repository_maintenance", 1), ("graph_maintenance", 0)]
)
def test_a_maintenance_decision_has_the_decision_model_fields(name: str, associated: int) -> None:
    item = load_contract(name)["properties"]["decisions"]["items"]
    assert set(item["properties"]) == set(Decision.model_fields)
    assert item["properties"]["action"]["enum"] == list(get_args(DecisionAction))
    card = item["properties"]["replacement"]["anyOf"][0]
    assert set(card["properties"]) == CARD_TEXT | {"associations"}
    assert len(_association_objects(card)) == associated


def test_the_card_contract_teaches_the_limits_the_models_enforce() -> None:
    card = load_contract("card")["properties"]
    associations = card["associations"]["anyOf"][0]["properties"]
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    for description, taught in (
        (card["title"]["description"], f"at most {LIMITS.title_bytes} UTF-8 bytes"),
        (card["recommendation"]["description"], f"at most {LIMITS.recommendation_bytes} UTF-8"),
        (associations["files"]["description"], f"at most {LIMITS.files};"),
        (associations["folders"]["description"], f"at most {LIMITS.folders})"),
        (associations["identifiers"]["description"], f"at most {LIMITS.identifiers}, {low}-{high}"),
        (associations["keyword_groups"]["description"], f"At most {LIMITS.keyword_groups} groups"),
    ):
        assert taught in description
