"""Is a contract a valid, strict Draft 2020-12 schema? A pure check, for ``contracts check``.

Strict means what both providers' structured outputs need and what admission assumes: the root
is an object, and every object (at any depth, inside ``items`` and ``anyOf`` too) closes
``additionalProperties`` and lists every property in ``required``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from active_memory.admission import CONTRACTS, contract_sha256, load_contract
from active_memory.models.base import Verdict

__all__ = ["DRAFT_2020_12", "ContractCheck", "check_contract", "check_contracts", "problems"]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


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
    for key, child in (node.get("properties") or {}).items():
        yield from _objects(child, f"{where}.properties.{key}")
    if "items" in node:
        yield from _objects(node["items"], f"{where}.items")
    for index, child in enumerate(node.get("anyOf") or []):
        yield from _objects(child, f"{where}.anyOf[{index}]")


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
        properties = set(node.get("properties") or {})
        required = set(node.get("required") or [])
        if properties != required:
            missing = sorted(properties - required)
            found.append(f"{where}: every property must be required (missing {missing})")
    return tuple(found)


def check_contract(name: str) -> ContractCheck:
    return ContractCheck(
        name=name, sha256=contract_sha256(name), problems=problems(load_contract(name))
    )


def check_contracts() -> tuple[ContractCheck, ...]:
    """Every shipped contract, checked."""
    return tuple(check_contract(name) for name in CONTRACTS)
