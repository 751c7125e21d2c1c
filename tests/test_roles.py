"""The specialist table: each row has its prompt and contract, and every reader follows it."""

from __future__ import annotations

import pytest

from active_memory.admission import CONTRACTS, load_contract
from active_memory.admission.stages import role_spec
from active_memory.agents.prompts import SPECIALISTS, load_prompt
from active_memory.agents.specialists import SPECS
from active_memory.data_folders import shipped_names
from active_memory.errors import AdmissionError
from active_memory.evidence.builder import SPECIALISTS as EVIDENCE_NEEDS
from active_memory.roles import ROLE_ROWS, ROLES, RoleRow, role_row


def missing_data(rows: tuple[RoleRow, ...]) -> list[str]:
    """The files the rows need that the shipped data folders lack."""
    prompts, contracts = set(shipped_names("prompts")), set(shipped_names("contracts"))
    missing = [f"prompts/{row.name}.md" for row in rows if f"{row.name}.md" not in prompts]
    missing += [
        f"contracts/{row.name}.schema.json"
        for row in rows
        if f"{row.name}.schema.json" not in contracts
    ]
    return missing


def test_every_row_has_its_prompt_and_contract() -> None:
    assert missing_data(ROLE_ROWS) == []
    for row in ROLE_ROWS:
        assert load_prompt(row.name)
        assert load_contract(row.contract)["type"] == "object"


def test_a_row_without_its_files_is_caught() -> None:
    extra = RoleRow(
        "code_review", "repository", maintenance=False,  # type: ignore[arg-type]
        graph=False, checkout=True, completions=True, transcripts=True, receipts=True,
    )  # fmt: skip
    assert missing_data((*ROLE_ROWS, extra)) == [
        "prompts/code_review.md",
        "contracts/code_review.schema.json",
    ]


def test_every_reader_follows_the_rows_in_order() -> None:
    assert SPECIALISTS == ROLES == tuple(SPECS) == tuple(EVIDENCE_NEEDS)
    assert set(CONTRACTS) == {"card", *ROLES}
    for row in ROLE_ROWS:
        assert role_spec(row.name) is row is role_row(row.name)
        assert SPECS[row.name] is row is EVIDENCE_NEEDS[row.name]


def test_an_unknown_role_is_refused_naming_the_roles() -> None:
    assert role_row("code_review") is None
    with pytest.raises(AdmissionError, match="unknown specialist role 'code_review'"):
        role_spec("code_review")


def test_each_scope_has_one_maintenance_and_one_discovery_role() -> None:
    # The ledger and the postmortem's report find a scope's maintainer by scope.
    kinds = sorted((row.scope, row.maintenance) for row in ROLE_ROWS)
    assert kinds == [("graph", False), ("graph", True), ("repository", False), ("repository", True)]
