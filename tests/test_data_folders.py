"""The specialists as data: ``prompts/`` and ``contracts/`` ship in the wheel, and an author's
copy of a folder is accepted only when it holds exactly the shipped files."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder
from jsonschema import Draft202012Validator

from active_memory.admission import CONTRACTS
from active_memory.agents.prompts import PROMPT_NAMES
from active_memory.data_folders import (
    FOLDERS,
    MAX_FILE_BYTES,
    Overrides,
    active_overrides,
    check_copy,
    read_file,
    shipped_folder,
    shipped_names,
    using_overrides,
)
from active_memory.errors import ConfigError
from folder_copies import shipped_copy

ROOT = Path(__file__).resolve().parents[1]


def test_the_folders_hold_the_prompts_the_contracts_and_the_run_record_schema() -> None:
    assert shipped_names("prompts") == tuple(sorted(f"{name}.md" for name in PROMPT_NAMES))
    contracts = [f"{name}.schema.json" for name in CONTRACTS]
    assert shipped_names("contracts") == tuple(sorted([*contracts, "run-record.schema.json"]))


@pytest.mark.parametrize("name", shipped_names("contracts"))
def test_every_schema_of_the_contracts_folder_is_draft_2020_12(name: str) -> None:
    """Strictness of the specialists' own is tests/admission/test_contract_schemas.py's; the
    test above makes its CONTRACTS every one of them."""
    schema = json.loads(read_file("contracts", name))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_the_built_wheel_ships_both_folders_byte_for_byte(tmp_path: Path) -> None:
    [wheel] = list(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"]))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for folder in FOLDERS:
            for name in shipped_names(folder):
                packed = archive.read(f"active_memory/{folder}/{name}")
                assert packed == shipped_folder(folder).joinpath(name).read_bytes(), name
    # The folders they came from hold no data, so no stale copy shadows them (schemas/ keeps
    # only its one-release module that reads the new place).
    for old in ("active_memory/agents/prompts/", "active_memory/schemas/"):
        assert not [name for name in names if name.startswith(old) and not name.endswith(".py")]
    assert not [name for name in names if name.endswith(".schema.json") and "/admission/" in name]


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_copy_made_with_cp_r_is_accepted(tmp_path: Path, folder: str) -> None:
    copy = shipped_copy(folder, tmp_path)
    (copy / "NOTES.txt").write_text("an author's notes are not the folder's files")
    (copy / ".#preamble.md").write_text("an editor's lock file")
    check_copy(folder, copy)


def test_the_wrong_folder_is_refused_naming_every_missing_file(tmp_path: Path) -> None:
    contracts = shipped_copy("contracts", tmp_path)
    missing = ", ".join(sorted(f"{name}.md" for name in PROMPT_NAMES))
    with pytest.raises(ConfigError, match=f"lacks {missing}; copy '.*prompts' \\(cp -r\\)"):
        check_copy("prompts", contracts)


def test_a_misspelt_file_is_refused_naming_both_names(tmp_path: Path) -> None:
    prompts = shipped_copy("prompts", tmp_path)
    (prompts / "graph_discovery.md").rename(prompts / "graph_discovry.md")
    with pytest.raises(ConfigError) as caught:
        check_copy("prompts", prompts)
    assert caught.value.path == f"prompts folder {str(prompts)!r}"
    assert caught.value.problem.startswith(
        "lacks graph_discovery.md; holds graph_discovry.md, not a shipped file name; copy "
    )


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "prompts").write_text("")
    with pytest.raises(ConfigError, match="is not a folder"):
        check_copy("prompts", tmp_path / "prompts")


def test_an_incomplete_copy_is_refused_before_the_block_starts(tmp_path: Path) -> None:
    contracts = shipped_copy("contracts", tmp_path)
    (contracts / "card.schema.json").unlink()
    with (
        pytest.raises(ConfigError, match=r"lacks card\.schema\.json"),
        using_overrides(Overrides(contracts=contracts)),
    ):
        pytest.fail("the block ran")  # pragma: no cover
    assert active_overrides() == Overrides()


def test_a_copy_is_read_inside_the_block_only(tmp_path: Path) -> None:
    contracts = shipped_copy("contracts", tmp_path)
    (contracts / "card.schema.json").write_bytes(b'{"edited": true}')
    shipped = read_file("contracts", "card.schema.json")
    with using_overrides(Overrides(contracts=contracts)):
        assert read_file("contracts", "card.schema.json") == b'{"edited": true}'
        assert read_file("prompts", "preamble.md") == (  # no copy of prompts/: as shipped
            shipped_folder("prompts").joinpath("preamble.md").read_bytes()
        )
    assert read_file("contracts", "card.schema.json") == shipped


def test_a_file_in_a_copy_is_bounded_before_it_is_read(tmp_path: Path) -> None:
    prompts = shipped_copy("prompts", tmp_path)
    (prompts / "preamble.md").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with (
        using_overrides(Overrides(prompts=prompts)),
        pytest.raises(ConfigError, match=rf"preamble\.md'.*over the limit of {MAX_FILE_BYTES}"),
    ):
        read_file("prompts", "preamble.md")


def test_only_a_shipped_name_can_be_read() -> None:
    with pytest.raises(ValueError, match=r"prompts/ ships no '\.\./contracts/card\.schema\.json'"):
        read_file("prompts", "../contracts/card.schema.json")
