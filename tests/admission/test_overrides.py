"""An author's copy of prompts/ or contracts/ is what the prompts and admission read, inside a
block only."""

from __future__ import annotations

import json
from pathlib import Path

from active_memory.admission import contract_sha256, load_contract
from active_memory.admission.validate import AdmissionContext, admit_discovery
from active_memory.agents.prompts import load_prompt, prompt_sha256
from active_memory.data_folders import Overrides, using_overrides
from admission.builders import repo_discovery
from folder_copies import shipped_copy


def test_a_prompt_edited_in_a_copy_replaces_the_shipped_one_inside_the_block(
    tmp_path: Path,
) -> None:
    prompts = shipped_copy("prompts", tmp_path)
    (prompts / "graph_discovery.md").write_text("Only this.\n")
    shipped = prompt_sha256("graph_discovery")
    preamble = load_prompt("preamble")
    with using_overrides(Overrides(prompts=prompts)):
        assert load_prompt("graph_discovery") == "Only this.\n"
        assert load_prompt("preamble") == preamble  # copied unchanged: the same text
        assert prompt_sha256("graph_discovery") != shipped
    assert prompt_sha256("graph_discovery") == shipped


def test_an_unchanged_copy_hashes_as_shipped(tmp_path: Path) -> None:
    """A hash names the text, not where it was read: recordings replay against a copy."""
    prompts, contracts = shipped_copy("prompts", tmp_path), shipped_copy("contracts", tmp_path)
    shipped = (prompt_sha256("repository_discovery"), contract_sha256("repository_discovery"))
    with using_overrides(Overrides(prompts=prompts, contracts=contracts)):
        copied = (prompt_sha256("repository_discovery"), contract_sha256("repository_discovery"))
    assert copied == shipped


def test_an_edited_contract_is_what_admission_validates(
    tmp_path: Path, context: AdmissionContext
) -> None:
    name = "repository_discovery"
    contracts = shipped_copy("contracts", tmp_path)
    schema = load_contract(name)
    schema["properties"]["lessons"]["items"]["properties"]["title"] = {"type": "integer"}
    (contracts / f"{name}.schema.json").write_text(json.dumps(schema))
    answer = {"lessons": [repo_discovery()]}
    shipped = contract_sha256(name)
    with using_overrides(Overrides(contracts=contracts)):
        assert contract_sha256(name) != shipped
        assert load_contract(name) == schema
        edited = admit_discovery(answer, name, context)
    assert [(r.stage, r.code) for r in edited.rejections] == [("shape", "schema_type")]
    assert not any(r.stage == "shape" for r in admit_discovery(answer, name, context).rejections)
