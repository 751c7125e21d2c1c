"""``contracts check``: strict Draft 2020-12 at every level, as a pure function."""

from __future__ import annotations

from typing import Any

from active_memory.admission import CONTRACTS, contract_sha256
from active_memory.admission.check import DRAFT_2020_12, ContractCheck, check_contracts, problems


def _schema(**item: Any) -> dict[str, Any]:
    inner = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
             "additionalProperties": False} | item  # fmt: skip
    return {
        "$schema": DRAFT_2020_12,
        "type": "object",
        "properties": {"items": {"type": "array", "items": inner}},
        "required": ["items"],
        "additionalProperties": False,
    }


def test_every_shipped_contract_passes_with_its_hash() -> None:
    results = check_contracts()
    assert [r.name for r in results] == list(CONTRACTS)
    assert all(r.ok for r in results)
    assert [r.sha256 for r in results] == [contract_sha256(name) for name in CONTRACTS]


def test_a_strict_schema_has_no_problems() -> None:
    assert problems(_schema()) == ()


def test_an_open_or_partly_required_nested_object_is_named() -> None:
    assert problems(_schema(additionalProperties=True)) == (
        "$.properties.items.items: additionalProperties must be false",
    )
    found = problems(_schema(required=[]))
    assert found == ("$.properties.items.items: every property must be required (missing ['a'])",)


def test_a_wrong_dialect_or_an_invalid_schema_is_a_problem() -> None:
    schema = _schema()
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema["properties"]["items"]["type"] = "not-a-type"
    found = problems(schema)
    assert any("$schema must be" in p for p in found)
    assert any("not a valid Draft 2020-12 schema" in p for p in found)


def test_a_check_prints_its_verdict_with_its_problems() -> None:
    check = ContractCheck(
        name="c", sha256="ab", problems=("$: additionalProperties must be false",)
    )
    assert check.model_dump(mode="json") == {
        "name": "c", "sha256": "ab", "ok": False,
        "problems": ["$: additionalProperties must be false"],
    }  # fmt: skip
