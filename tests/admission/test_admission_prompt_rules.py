"""The checks issue 15 added so admission enforces what the prompts demand: no run names in card
text, references spelt as the tools print them, folders not too broad, read what you cite."""

from __future__ import annotations

from typing import Any

import pytest

from active_memory.admission.references import parse_references
from active_memory.admission.run_mentions import names_run_evidence
from active_memory.admission.validate import AdmissionContext, admit_discovery
from active_memory.models.runs import RunRecord

from .builders import (
    Discover,
    Maintain,
    assoc,
    decision,
    graph_discovery,
    graph_lesson,
    graph_replacement,
    only_rejection,
    replacement,
    repo_discovery,
    repo_lesson,
)


@pytest.mark.parametrize(
    "text",
    [
        "Seen in run-1: reload the settings",
        "As e-build-2 showed, reload the settings",
        "Receipt 1 shows the read; reload the settings",
        "See receipt:1 before reloading",
        "Compare with exec:e-build-1",
        "Receipts #3 and 4 were reads",
    ],
)
def test_card_text_naming_the_run_its_executions_or_receipts_is_found(
    context: AdmissionContext, text: str
) -> None:
    assert names_run_evidence([text], context.run)


@pytest.mark.parametrize(
    "text",
    [
        "Ask review to rerun the suite",  # a node id names a step, not this run
        "Run the tests before the build",  # "run" without a colon is a verb
        "Keep the receipts table in sync",  # receipts without a number
        "Check e-build-20 style names",  # a longer token is another name
        "Use the plan node's list as given",
    ],
)
def test_ordinary_advice_is_not_a_run_name(context: AdmissionContext, text: str) -> None:
    assert not names_run_evidence([text], context.run)


def test_short_execution_ids_are_not_matched(context: AdmissionContext) -> None:
    run: RunRecord = context.run
    short = run.executions[0].model_copy(update={"id": "main"})
    changed = run.model_copy(update={"executions": (short, *run.executions[1:])})
    assert not names_run_evidence(["Start from the main module"], changed)


def test_a_discovery_card_naming_an_execution_is_refused(discover: Discover) -> None:
    item = graph_discovery(recommendation="As e-build-1 did, read the last tool output first.")
    assert only_rejection(discover("graph_discovery", item)) == ("card", "card_names_run_evidence")


def test_a_replacement_naming_a_receipt_is_refused(maintain: Maintain) -> None:
    lesson = graph_lesson()
    adapt = decision(
        lesson,
        "adapt",
        references=["exec:e-build-1"],
        replacement=graph_replacement(title="Run the unit tests (receipt 1) first"),
    )
    result = maintain("graph_maintenance", [lesson], adapt)
    assert only_rejection(result) == ("card", "card_names_run_evidence")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("repository:src/app/config.py:24", "repository_position"),
        ("repository:src/app/config.py:24:5", "repository_position"),
        ("repository:src/app/config.py:10-20", "repository_position"),
        ("repository:src/app/config.py#L24", "repository_position"),
        ("repository:src/app/config.py#L2-L9", "repository_position"),
    ],
)
def test_a_position_after_a_cited_file_has_its_own_code(text: str, code: str) -> None:
    assert parse_references([text]) == ((), code)


def test_dot_slash_is_normalised_and_then_counts_as_a_duplicate() -> None:
    parsed, problem = parse_references(["repository:./src/app/config.py"])
    assert problem is None
    assert [r.text for r in parsed] == ["repository:src/app/config.py"]
    again = parse_references(["repository:src/app/config.py", "repository:././src/app/config.py"])
    assert again == ((), "duplicate_reference")


@pytest.mark.parametrize("folder", ["src", "docs", ".", ""])
def test_a_top_level_folder_or_the_root_is_too_broad(discover: Discover, folder: str) -> None:
    item = repo_discovery(associations=assoc(folders=[folder]))
    assert only_rejection(discover("repository_discovery", item)) == ("source", "folder_too_broad")


def test_a_folder_two_levels_deep_is_fine(discover: Discover) -> None:
    item = repo_discovery(associations=assoc(folders=["src/app"]))
    assert discover("repository_discovery", item).rejections == ()


def _discover_reading(
    context: AdmissionContext, read: frozenset[str] | None, **changes: Any
) -> tuple[str, str] | None:
    result = admit_discovery({"lessons": [repo_discovery(**changes)]}, "repository_discovery",
                             context, read_paths=read)  # fmt: skip
    if not result.rejections:
        return None
    return only_rejection(result)


def test_a_citation_needs_the_file_read_when_the_session_had_tools(
    context: AdmissionContext,
) -> None:
    assert _discover_reading(context, None) is None  # no tools over the checkout: not checked
    assert _discover_reading(context, frozenset({"src/app/config.py"})) is None
    assert _discover_reading(context, frozenset()) == ("source", "cited_file_unread")
    # A missing file says so first: reading cannot make it exist.
    missing = ["exec:e-build-1", "repository:src/app/nope.py"]
    assert _discover_reading(context, frozenset(), references=missing) == (
        "source",
        "cited_file_missing",
    )


@pytest.mark.parametrize(
    "text",
    [
        "repository:../outside",
        "repository:/etc/passwd",
        "repository:~/projects/order-service/src/app/config.py",
        "repository:~alice/src/app/config.py",
        "repository:src/../src/app/config.py",
        "repository:src/../../outside.py",
        "repository:src\\app\\config.py",
        "repository:C:/src/app/config.py",
        "repository:src/app/",
        "repository:src//app/config.py",
        "repository:src/./app/config.py",
    ],
)
def test_a_path_outside_the_root_grammar_is_refused_as_such(text: str) -> None:
    """Not ``cited_file_missing``: the file may exist, the spelling is what is wrong."""
    assert parse_references([text]) == ((), "repository_path_invalid")


def test_glob_characters_in_a_cited_file_name_are_not_a_path_error() -> None:
    parsed, problem = parse_references(["repository:app/[id]/page.tsx"])
    assert problem is None
    assert [r.text for r in parsed] == ["repository:app/[id]/page.tsx"]


def test_a_hostile_path_is_refused_by_the_reference_stage(discover: Discover) -> None:
    item = repo_discovery(references=["exec:e-build-1", "repository:../outside"])
    assert only_rejection(discover("repository_discovery", item)) == (
        "references", "repository_path_invalid"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"files": ["./src/app/config.py"]}, "files_invalid"),
        ({"files": ["src\\app\\config.py"]}, "files_invalid"),
        ({"files": ["src/../src/app/config.py"]}, "files_invalid"),
        ({"folders": ["src/app/"]}, "folders_invalid"),
        ({"folders": ["./src/app"]}, "folders_invalid"),
        ({"identifiers": ["x"]}, "identifiers_invalid"),
        ({"identifiers": ["load-settings"]}, "identifiers_invalid"),
    ],
)
def test_a_misspelt_association_gets_a_card_code_not_a_missing_one(
    discover: Discover, changes: dict[str, Any], code: str
) -> None:
    """Checked before the checkout: ``./a.py`` exists, ``x`` may occur in the cited file."""
    item = repo_discovery(associations=assoc(**changes))
    assert only_rejection(discover("repository_discovery", item)) == ("card", code)


@pytest.mark.parametrize("folder", [".", "./", "/"])
def test_the_root_spelt_any_way_is_still_too_broad(discover: Discover, folder: str) -> None:
    item = repo_discovery(associations=assoc(folders=[folder]))
    assert only_rejection(discover("repository_discovery", item)) == ("source", "folder_too_broad")


def test_a_replacement_with_a_misspelt_association_gets_a_card_code(maintain: Maintain) -> None:
    lesson = repo_lesson()
    adapt = decision(
        lesson, "adapt", references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(associations=assoc(files=["./src/app/config.py"])),
    )  # fmt: skip
    result = maintain("repository_maintenance", [lesson], adapt)
    assert only_rejection(result) == ("card", "files_invalid")
