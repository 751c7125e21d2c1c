"""Every rule sentence of the prompts maps to admission codes, or is marked as judgement.

A rule sentence is a paragraph or list item (outside the examples and the contract) that uses a
rule word (must, never, only, at least, at most, exactly, ...). Each one carries an HTML comment:
``<!-- rule: stage:code, ... -->`` naming the admission codes that enforce it, or
``<!-- judgement -->`` when admission cannot check it and leaves it to the model. Every code
named must be one docs/admission.md documents for that stage, so a prompt cannot promise a check
the host does not make. The comments never reach the model.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from active_memory.agents.prompts import PROMPT_NAMES, SPECIALISTS, run_material, system_prompt
from active_memory.data_folders import shipped_folder

DOCS = Path(__file__).parents[3] / "docs" / "admission.md"
RULE_WORDS = re.compile(
    r"\b(must|never|only|at least|at most|exactly|refused|refuses|no other|not yours|"
    r"none missing|is not enough|cite|always)\b",
    re.IGNORECASE,
)
TAG = re.compile(r"<!--\s*(rule:\s*(?P<codes>[^>]*?)|judgement)\s*-->", re.DOTALL)
UNCHECKED_SECTIONS = ("Examples", "Example", "Contract")
MATERIAL = {"run_id": "run-1", "specialist": "graph_discovery", "payload": "  `executions`.",
            "evidence_files": "- graph.json", "tool_roots": "x"}  # fmt: skip


def _raw(name: str) -> str:
    package = shipped_folder("prompts")
    return package.joinpath(f"{name}.md").read_text(encoding="utf-8")


def _blocks(text: str) -> list[tuple[str, str]]:
    """(section, block) for every paragraph and list item outside the unchecked sections."""
    blocks: list[tuple[str, str]] = []
    section = ""
    current: list[str] = []

    def close() -> None:
        if current and section not in UNCHECKED_SECTIONS:
            blocks.append((section, "\n".join(current)))
        current.clear()

    for line in text.splitlines():
        if line.startswith("#"):
            close()
            section = line.lstrip("#").strip()
        elif not line.strip():
            close()
        elif re.match(r"(- |\d+\. )", line):
            close()
            current.append(line)
        else:
            current.append(line)
    close()
    return blocks


def _documented_codes() -> dict[str, set[str]]:
    """docs/admission.md's stage table: stage -> every backticked code in its row."""
    codes: dict[str, set[str]] = {}
    for line in DOCS.read_text("utf-8").splitlines():
        row = re.match(r"\| (\w+) \| (.*) \|$", line)
        if row and row.group(1) != "stage":
            codes[row.group(1)] = set(re.findall(r"`([A-Za-z0-9_]+)`", row.group(2)))
    return codes


def _tagged_codes(block: str) -> list[str]:
    found = TAG.search(block)
    assert found is not None
    if found.group("codes") is None:
        return []
    return [code.strip() for code in found.group("codes").split(",") if code.strip()]


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_every_rule_sentence_is_mapped_to_a_check_or_marked_judgement(name: str) -> None:
    unmapped = [
        block
        for _, block in _blocks(_raw(name))
        if RULE_WORDS.search(TAG.sub("", block)) and not TAG.search(block)
    ]
    assert not unmapped, f"{name}.md has rule sentences without a tag:\n\n" + "\n\n".join(unmapped)


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_every_tagged_code_is_a_documented_admission_code(name: str) -> None:
    documented = _documented_codes()
    for _, block in _blocks(_raw(name)):
        if not TAG.search(block):
            continue
        for tagged in _tagged_codes(block):
            stage, _, code = tagged.partition(":")
            assert stage in documented, f"{name}.md tags unknown stage {stage!r}"
            assert code in documented[stage], f"{name}.md tags {tagged!r}, not in docs/admission.md"


def test_the_mapping_is_not_vacuous() -> None:
    """The prompts tag the checks this issue added; a parser that found no tags would pass."""
    tagged = {
        code
        for name in PROMPT_NAMES
        for _, block in _blocks(_raw(name))
        if TAG.search(block)
        for code in _tagged_codes(block)
    }
    for code in (
        "attribution:no_own_evidence",
        "references:repository_position",
        "card:card_names_run_evidence",
        "source:cited_file_unread",
        "source:folder_too_broad",
        "source:identifier_not_in_cited_file",
        "coverage:foreign_id",
    ):
        assert code in tagged


def test_an_untagged_rule_sentence_is_found() -> None:
    text = "## Rules\n\n- Never cite a file you did not read.\n- Cite it. <!-- judgement -->\n"
    untagged = [b for _, b in _blocks(text) if RULE_WORDS.search(b) and not TAG.search(b)]
    assert untagged == ["- Never cite a file you did not read."]


@pytest.mark.parametrize("specialist", SPECIALISTS)
def test_the_model_never_sees_a_tag(specialist: str) -> None:
    text = system_prompt(specialist, contract="{}") + run_material(**MATERIAL)
    assert "<!--" not in text
    assert "judgement" not in text
    assert "rule:" not in text
