"""An author's folder replaces shipped prompts and contracts by file name, inside a block only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.admission import contract_sha256, load_contract
from active_memory.admission.overrides import Overrides, check_folder, using_overrides
from active_memory.admission.validate import AdmissionContext, admit_discovery
from active_memory.agents.prompts import load_prompt, prompt_sha256
from active_memory.errors import ConfigError
from admission.builders import repo_discovery


def test_a_prompt_file_replaces_the_shipped_one_inside_the_block(tmp_path: Path) -> None:
    (tmp_path / "graph_discovery.md").write_text("Only this.\n")
    shipped = prompt_sha256("graph_discovery")
    with using_overrides(Overrides(prompts=tmp_path)):
        assert load_prompt("graph_discovery") == "Only this.\n"
        assert load_prompt("preamble") != ""  # not in the folder: as shipped
        assert prompt_sha256("graph_discovery") != shipped
    assert prompt_sha256("graph_discovery") == shipped


def test_an_edited_contract_is_what_admission_validates(
    tmp_path: Path, context: AdmissionContext
) -> None:
    name = "repository_discovery"
    schema = load_contract(name)
    schema["properties"]["lessons"]["items"]["properties"]["title"] = {"type": "integer"}
    (tmp_path / f"{name}.schema.json").write_text(json.dumps(schema))
    answer = {"lessons": [repo_discovery()]}
    shipped = contract_sha256(name)
    with using_overrides(Overrides(contracts=tmp_path)):
        assert contract_sha256(name) != shipped
        assert load_contract(name) == schema
        edited = admit_discovery(answer, name, context)
    assert [(r.stage, r.code) for r in edited.rejections] == [("shape", "schema_type")]
    assert not any(r.stage == "shape" for r in admit_discovery(answer, name, context).rejections)


def test_check_folder_names_what_it_overrides_and_refuses_strangers(tmp_path: Path) -> None:
    (tmp_path / "card.schema.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("ignored")
    assert check_folder("contracts", tmp_path, ".schema.json", ("card", "x")) == ("card",)
    (tmp_path / "cards.schema.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"holds 'cards\.schema\.json', which replaces no"):
        check_folder("contracts", tmp_path, ".schema.json", ("card", "x"))
