"""Prompt and contract overrides and ``specialist prompt`` through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from active_memory.admission import load_contract, wire_schema
from active_memory.agents.prompts import load_prompt
from active_memory.data_folders import shipped_folder
from cli.authoring_kit import cli, demo_runs, first_published
from folder_copies import shipped_copy

PROMPT = ("specialist", "prompt", "graph_discovery")


def _recorded(run: Path, specialist: str) -> dict[str, str]:
    for line in (run / "exchanges.jsonl").read_text().splitlines():
        record = json.loads(line)
        if (record["specialist"], record["turn"]) == (specialist, 1):
            return record
    raise AssertionError(f"no first turn of {specialist}")


@pytest.mark.parametrize("specialist", ["graph_discovery", "repository_discovery"])
def test_specialist_prompt_prints_what_the_recorded_model_received(
    tmp_path: Path, specialist: str
) -> None:
    first, _ = demo_runs(tmp_path)
    result = cli("specialist", "prompt", specialist, first, "--json",
                 "--store", tmp_path / "s.sqlite3")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    recorded = _recorded(first, specialist)
    checkout = str(first / "checkout")
    assert shown["system"] == recorded["system"]
    assert shown["prompt"].replace(checkout, "$CHECKOUT") == recorded["evidence"]
    assert shown["prompt_sha256"] == recorded["prompt_sha256"]
    assert shown["contract_sha256"] == recorded["contract_sha256"]


def test_an_edited_prompt_in_a_folder_replaces_the_shipped_one(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    prompts = shipped_copy("prompts", tmp_path)
    (prompts / "graph_discovery.md").write_text(
        load_prompt("graph_discovery") + "\nAUTHOR'S NEW RULE.\n"
    )
    shipped = json.loads(cli(*PROMPT, first, "--json", "--store", tmp_path / "s").stdout)
    edited = cli(*PROMPT, first, "--json", "--store", tmp_path / "s", "--prompts", prompts)
    through_env = cli(*PROMPT, first, "--json", "--store", tmp_path / "s",
                      env={"ACTIVE_MEMORY_PROMPTS": str(prompts)})  # fmt: skip
    for result in (edited, through_env):
        assert result.exit_code == 0, result.stderr
        shown = json.loads(result.stdout)
        assert "AUTHOR'S NEW RULE." in shown["system"]
        assert shown["prompt_sha256"] != shipped["prompt_sha256"]
    assert "AUTHOR'S NEW RULE." not in shipped["system"]


def test_a_misnamed_file_is_refused_naming_the_names(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    prompts = shipped_copy("prompts", tmp_path)
    (prompts / "graph_discovery.md").rename(prompts / "graph_discovry.md")
    result = cli(*PROMPT, first, "--store", tmp_path / "s", "--prompts", prompts)
    assert result.exit_code == 2
    assert (
        f"error: prompts folder {str(prompts)!r}: lacks graph_discovery.md; holds "
        "graph_discovry.md, not a shipped file name; copy "
    ) in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_folder_that_is_not_a_copy_of_prompts_is_refused_naming_what_it_lacks(
    tmp_path: Path,
) -> None:
    """The usual slip: the contracts folder, or an empty one, passed as --prompts."""
    first, _ = demo_runs(tmp_path)
    contracts = shipped_copy("contracts", tmp_path)
    result = cli(*PROMPT, first, "--store", tmp_path / "s", "--prompts", contracts)
    assert result.exit_code == 2
    assert (
        f"lacks graph_discovery.md, graph_maintenance.md, preamble.md, repository_discovery.md, "
        f"repository_maintenance.md, run_material.md; copy {str(shipped_folder('prompts'))!r} "
        "(cp -r) and edit the copy"
    ) in result.stderr


def test_a_prompt_with_an_unknown_placeholder_is_bad_input(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    prompts = shipped_copy("prompts", tmp_path)
    (prompts / "preamble.md").write_text("Hello {{user_name}}.\n")
    result = cli(*PROMPT, first, "--store", tmp_path / "s", "--prompts", prompts)
    assert result.exit_code == 2
    assert "prompt 'preamble': uses placeholders ['user_name']" in result.stderr


def test_an_edited_contract_reaches_the_prompt(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    contracts = shipped_copy("contracts", tmp_path)
    schema = load_contract("graph_discovery")
    schema["description"] = "Edited by the author."
    (contracts / "graph_discovery.schema.json").write_text(json.dumps(schema))
    result = cli(*PROMPT, first, "--json", "--store", tmp_path / "s", "--contracts", contracts)
    assert result.exit_code == 0, result.stderr
    assert "Edited by the author." in json.loads(result.stdout)["system"]


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda s: s["properties"].__setitem__("extra", {"type": "string"}),
         "every property must be required"),
        (lambda s: s.__setitem__("minProperties", 1), "keyword 'minProperties' is outside"),
    ],
)  # fmt: skip
def test_specialist_run_refuses_a_contract_that_contracts_check_flags(
    tmp_path: Path, edit: object, problem: str
) -> None:
    first, _ = demo_runs(tmp_path)
    contracts = shipped_copy("contracts", tmp_path)
    schema = load_contract("graph_discovery")
    edit(schema)  # type: ignore[operator]
    (contracts / "graph_discovery.schema.json").write_text(json.dumps(schema))
    result = cli("specialist", "run", "graph_discovery", first, "--provider", "replay",
                 "--store", tmp_path / "s", "--contracts", contracts)  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: contract 'graph_discovery' in {str(contracts)!r} is refused: "
    )
    assert problem in result.stderr
    assert "contracts check" in result.stderr


def test_a_contract_that_is_not_json_is_bad_input(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    contracts = shipped_copy("contracts", tmp_path)
    (contracts / "card.schema.json").write_text("{not json")
    result = cli(*PROMPT, first, "--store", tmp_path / "s", "--contracts", contracts)
    assert result.exit_code == 2
    assert "contract 'card': is not JSON" in result.stderr


def test_contracts_check_checks_the_files_of_a_folder(tmp_path: Path) -> None:
    contracts = shipped_copy("contracts", tmp_path)
    schema = load_contract("graph_discovery")
    schema["properties"]["lessons"]["maxItems"] = 3
    (contracts / "graph_discovery.schema.json").write_text(json.dumps(schema))
    result = cli("contracts", "check", contracts)
    assert result.exit_code == 1
    assert "BAD graph_discovery" in result.stdout
    assert "$.properties.lessons: keyword 'maxItems' is outside the subset" in result.stdout
    assert "ok  card" in result.stdout
    assert "error: contract(s) graph_discovery are not strict" in result.stderr
    shipped = cli("contracts", "check")
    assert shipped.exit_code == 0
    assert "BAD" not in shipped.stdout


def test_contracts_check_refuses_a_file_that_replaces_no_contract(tmp_path: Path) -> None:
    contracts = shipped_copy("contracts", tmp_path)
    (contracts / "graph.schema.json").write_text("{}")
    result = cli("contracts", "check", contracts)
    assert result.exit_code == 2
    assert "holds graph.schema.json, not a shipped file name" in result.stderr


def test_contracts_check_refuses_a_folder_that_lacks_a_contract(tmp_path: Path) -> None:
    contracts = shipped_copy("contracts", tmp_path)
    (contracts / "card.schema.json").unlink()
    result = cli("contracts", "check", contracts)
    assert result.exit_code == 2
    assert f"contracts folder {str(contracts)!r}: lacks card.schema.json; copy " in result.stderr


def test_the_text_output_is_the_system_prompt_the_first_message_and_the_tools(
    tmp_path: Path,
) -> None:
    first, _ = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    shown = json.loads(cli(*PROMPT, first, "--json", "--store", store).stdout)
    text = cli(*PROMPT, first, "--store", store)
    assert text.exit_code == 0, text.stderr
    head, rest = text.stdout.split("\n", 1)
    assert head.startswith("== system prompt of graph_discovery")
    system, rest = rest.split("\n== first message", 1)
    assert system == shown["system"]
    contract = json.dumps(wire_schema("graph_discovery"), indent=2, sort_keys=True)
    assert shown["system"].rstrip().endswith(contract)
    prompt, tools = rest.split("\n", 1)[1].split("\n== tools", 1)
    assert prompt == shown["prompt"]
    assert json.loads(tools.split("\n", 1)[1]) == shown["tool_specs"]
    assert [spec["name"] for spec in shown["tool_specs"]] == shown["tools"]


def test_a_maintenance_prompt_after_the_first_postmortem_is_what_the_model_received(
    tmp_path: Path,
) -> None:
    _, second = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    first_published(store)
    result = cli("specialist", "prompt", "repository_maintenance", second, "--json",
                 "--store", store)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    recorded = _recorded(second, "repository_maintenance")
    assert shown["system"] == recorded["system"]
    assert shown["prompt"].replace(str(second / "checkout"), "$CHECKOUT") == recorded["evidence"]
    assert shown["skipped_reason"] is None
    # The host tells maintenance what it checked itself: each lesson's provenance.
    assert (
        "- lesson-01JWNF15X00000000000000003: its source commit is an ancestor of the inspected "
        "commit; an adapt or retire of it can publish" in shown["prompt"]
    )


def test_a_specialist_a_postmortem_would_skip_is_still_shown_with_the_reason(
    tmp_path: Path,
) -> None:
    first, _ = demo_runs(tmp_path)
    shutil.rmtree(first / "checkout" / ".git")  # no longer a git work tree
    result = cli("specialist", "prompt", "repository_discovery", first, "--store",
                 tmp_path / "s.sqlite3")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip() == (
        "note: a postmortem would skip repository_discovery: not run: the checkout is not a git "
        "work tree, so repository lessons cannot be verified"
    )
