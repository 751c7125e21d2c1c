"""Is a contract a valid, strict Draft 2020-12 schema? A pure check, for ``contracts check``.

Strict means what both providers' structured outputs need and what admission assumes: the root
is an object, and every object (at any depth, inside ``items`` and ``anyOf`` too) closes
``additionalProperties`` and lists every property in ``required``; only the keywords both
providers document are used (:data:`KEYWORDS`), with at most :data:`MAX_OBJECT_DEPTH` levels of
nested objects (docs/admission.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from active_memory.admission import CONTRACTS, contract_sha256, load_contract
from active_memory.models.base import Verdict

__all__ = [
    "DRAFT_2020_12",
    "KEYWORDS",
    "MAX_OBJECT_DEPTH",
    "ContractCheck",
    "check_contract",
    "check_contracts",
    "problems",
]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
# The subset OpenAI strict structured output and Anthropic tool input schemas both document.
KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
     "description"}
)  # fmt: skip
MAX_OBJECT_DEPTH = 4


class ContractCheck(Verdict):
    """One contract's verdict; the JSON form (``contracts check --json``) adds ``ok``."""

    name: str
    sha256: str


def _objects(node: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(node, Mapping):
        return
    declared = node.get("type")
    kinds = declared if isinstance(declared, list) else [declared]
    if "object" in kinds:
        yield where, node
    for child_where, child in _children(node, where):
        yield from _objects(child, child_where)


def _children(node: Mapping[str, Any], where: str) -> Iterator[tuple[str, Any]]:
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            yield f"{where}.properties.{key}", child
    if "items" in node:
        yield f"{where}.items", node["items"]
    any_of = node.get("anyOf")
    if isinstance(any_of, list):
        for index, child in enumerate(any_of):
            yield f"{where}.anyOf[{index}]", child


def _subset_problems(node: Any, where: str, depth: int) -> Iterator[str]:
    """Keywords outside :data:`KEYWORDS` and objects nested deeper than allowed."""
    if not isinstance(node, Mapping):
        return
    allowed = KEYWORDS | {"$schema"} if where == "$" else KEYWORDS
    for keyword in sorted(set(node) - allowed):
        yield (
            f"{where}: keyword {keyword!r} is outside the subset both providers accept "
            f"({', '.join(sorted(KEYWORDS))})"
        )
    declared = node.get("type")
    if "object" in (declared if isinstance(declared, list) else [declared]):
        depth += 1
        if depth == MAX_OBJECT_DEPTH + 1:
            yield f"{where}: objects are nested more than {MAX_OBJECT_DEPTH} levels deep"
    for child_where, child in _children(node, where):
        yield from _subset_problems(child, child_where, depth)


def problems(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """Everything that keeps ``schema`` from being a strict Draft 2020-12 contract."""
    found: list[str] = []
    if schema.get("$schema") != DRAFT_2020_12:
        found.append(f"$schema must be {DRAFT_2020_12!r}")
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as error:
        found.append(f"not a valid Draft 2020-12 schema: {error.message}")
    if schema.get("type") != "object":
        found.append('the root must be "type": "object"')
    for where, node in _objects(schema, "$"):
        if node.get("additionalProperties") is not False:
            found.append(f"{where}: additionalProperties must be false")
        declared_properties = node.get("properties")
        properties = set(declared_properties) if isinstance(declared_properties, Mapping) else set()
        declared_required = node.get("required")
        required = set(declared_required) if isinstance(declared_required, list) else set()
        if properties != required:
            missing = sorted(properties - required)
            found.append(f"{where}: every property must be required (missing {missing})")
    found.extend(_subset_problems(schema, "$", 0))
    return tuple(found)


def check_contract(name: str) -> ContractCheck:
    return ContractCheck(
        name=name, sha256=contract_sha256(name), problems=problems(load_contract(name))
    )


def check_contracts() -> tuple[ContractCheck, ...]:
    """Every contract in force (shipped, or an author's copy), checked."""
    return tuple(check_contract(name) for name in CONTRACTS)
