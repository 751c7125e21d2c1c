"""Prompt fidelity: answers written from only the rendered prompt and evidence are admitted, and
answers that break a rule the prompt states get a code the prompt names for it.

Each bundled run is set up as the postmortem sees it (a git checkout; the clean-success run as
the demo's later run, after the first run's recorded postmortem published its lessons), and
every answer goes through the real admission with the host's context. The answer fixtures in
``tests/fixtures/prompt_fidelity/<run>/<specialist>.json`` were written by a model given only
the specialist's input (``specialist prompt NAME RUN``, the contract and every checkout and
evidence file as the tools print them), so ``read_paths`` is every file it was shown. Each
fixture names the prompt and contract sha256 it was written against.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from active_memory.admission.validate import (
    AdmissionContext,
    DiscoveryResult,
    MaintenanceResult,
    admit_discovery,
    admit_maintenance,
)
from active_memory.data_folders import shipped_folder
from active_memory.demo import load_bundle, materialize_run
from active_memory.models.config import parse_runtime_config
from active_memory.models.lessons import Lesson
from active_memory.models.runs import load_run_record
from active_memory.postmortem.binding import resolve_source_node, specialist_binding
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import prepare
from active_memory.postmortem.specialist_preview import NoModelCalls
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ReplayProvider
from fixture_runs import FIXTURES, RUNS

ANSWERS = FIXTURES / "prompt_fidelity"
DATES = {"first": "1748772000 +0000", "second": "1749376800 +0000"}
TAG = re.compile(r"<!--\s*rule:\s*([^>]*?)\s*-->")


@dataclass(frozen=True)
class Prepared:
    context: AdmissionContext
    lessons: tuple[Lesson, ...]
    files: frozenset[str]


def _files(checkout: Path) -> frozenset[str]:
    return frozenset(
        p.relative_to(checkout).as_posix()
        for p in checkout.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(checkout).parts
    )


async def _context(folder: Path, store: SqliteStore, scratch: Path) -> Prepared:
    record = load_run_record(folder)
    config = parse_runtime_config(record.runtime)
    options = PostmortemOptions(
        config=config, backend=store, private_dir=scratch, provider=NoModelCalls()
    )
    node = resolve_source_node(record.graph, config.postmortem.source_node)
    binding = specialist_binding(node, options.override, options.provider)
    prepared = await prepare(record, options, binding, deadline=time.monotonic() + 60)
    assert record.checkout is not None
    return Prepared(
        prepared.env.admission, tuple(prepared.snapshot.lessons), _files(record.checkout.path)
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Prepared]:
    """Each bundled run's admission context, as its postmortem prepares it."""
    import asyncio

    root = tmp_path_factory.mktemp("fidelity")

    async def build() -> dict[str, Prepared]:
        out: dict[str, Prepared] = {}
        first, _ = materialize_run(load_bundle("first"), root / "first", date=DATES["first"])
        verbose, _ = materialize_run(RUNS / "map-verbose-reviewer", root / "verbose")
        with SqliteStore(root / "empty.sqlite3") as empty:
            out["retry-and-review"] = await _context(first, empty, root / "e1")
            out["map-verbose-reviewer"] = await _context(verbose, empty, root / "e2")
        with SqliteStore(root / "lessons.sqlite3") as store:
            record = load_run_record(first)
            provider = ReplayProvider(first / "exchanges.jsonl")
            await run_postmortem(record, PostmortemOptions(
                config=parse_runtime_config(record.runtime), backend=store,
                private_dir=root / "e3", provider=provider, new_id=sequential_ids(),
            ))  # fmt: skip
            # The same run reviewed again with the lessons it published: the only bundled way a
            # graph lesson reaches graph maintenance (the demo's second run is another graph).
            out["retry-and-review-reviewed"] = await _context(first, store, root / "e5")
            second, _ = materialize_run(
                load_bundle("second"), root / "second", parent=first / "checkout",
                date=DATES["second"],
            )  # fmt: skip
            out["clean-success"] = await _context(second, store, root / "e4")
        return out

    return asyncio.run(build())


def _admit(
    prepared: Prepared, specialist: str, answer: dict[str, Any], read: frozenset[str] | None
) -> DiscoveryResult | MaintenanceResult:
    if specialist.endswith("maintenance"):
        scope = specialist.split("_")[0]
        supplied = [lesson for lesson in prepared.lessons if lesson.scope.kind == scope]
        return admit_maintenance(answer, specialist, supplied, prepared.context, read_paths=read)
    return admit_discovery(answer, specialist, prepared.context, read_paths=read)


def _codes(result: DiscoveryResult | MaintenanceResult) -> list[str]:
    return [f"{r.stage}:{r.code}" for r in result.rejections]


def _prompt_codes(specialist: str) -> set[str]:
    """Every code the preamble and the specialist's prompt tag a rule sentence with."""
    package = shipped_folder("prompts")
    text = "".join(package.joinpath(f"{n}.md").read_text("utf-8") for n in ("preamble", specialist))
    return {code.strip() for found in TAG.findall(text) for code in found.split(",")}


# --- answers written from the rendered prompt alone ---------------------------------------


def _answer_files() -> list[Path]:
    return sorted(ANSWERS.glob("*/*.json"))


def test_there_are_answers_for_every_specialist_the_bundled_runs_schedule() -> None:
    found = {(p.parent.name, p.stem) for p in _answer_files()}
    assert found >= {
        ("retry-and-review", "graph_discovery"),
        ("retry-and-review", "repository_discovery"),
        ("clean-success", "repository_maintenance"),
        ("retry-and-review-reviewed", "graph_maintenance"),
    }


@pytest.mark.parametrize("path", _answer_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_answer_written_from_the_prompt_alone_is_admitted(
    runs: dict[str, Prepared], path: Path
) -> None:
    fixture = json.loads(path.read_text("utf-8"))
    prepared = runs[path.parent.name]
    result = _admit(prepared, path.stem, fixture["answer"], prepared.files)
    # An answer that really breaks a stated rule says so in the fixture, with the code.
    assert _codes(result) == fixture.get("expected_rejections", [])
    if isinstance(result, MaintenanceResult):
        assert result.complete
        assert len(result.decisions) == len(fixture["answer"]["decisions"])
    else:
        expected = len(fixture["answer"]["lessons"]) - len(fixture.get("expected_rejections", []))
        assert len(result.proposals) + len(result.quarantined) == expected
    for code in fixture.get("expected_rejections", []):
        assert code in _prompt_codes(path.stem), f"{code} is not a rule the prompt states"


# --- probes: each breaks one stated rule ------------------------------------------------------

CONFTEST_CARD: dict[str, Any] = {
    "title": "Name every setting APP_*: tests clear only APP_ variables",
    "recommendation": "The autouse fixture _isolated_settings in tests/conftest.py deletes only "
    "APP_-prefixed environment variables, so a setting read from an unprefixed name takes the "
    "harness environment's value in tests; read every setting from an APP_ name.",
    "associations": {"files": ["tests/conftest.py"], "folders": [],
                     "identifiers": ["_isolated_settings"], "keyword_groups": []},
    "node_id": "implement",
    "references": ["exec:ex-implement-1a3", "receipt:7", "repository:tests/conftest.py"],
    "reason": "Attempt 3 found the harness's FEATURE_FLAGS leaking past the conftest.",
    "repository_specific": True,
}  # fmt: skip
REVIEW_CARD: dict[str, Any] = {
    "title": "Run the test suite yourself before approving",
    "recommendation": "Run the whole test suite before answering APPROVE; a worker's summary "
    "says what it ran, not that the final change still passes.",
    "associations": None,
    "node_id": "review",
    "references": ["exec:ex-review-2", "receipt:18", "exec:ex-implement-2"],
    "reason": "The second review ran pytest on the documented change before approving.",
    "repository_specific": False,
}


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    item = copy.deepcopy(base)
    for key, value in changes.items():
        if key.startswith("assoc_"):
            item["associations"][key[len("assoc_") :]] = value
        else:
            item[key] = value
    return item


ALL = object()
PROBES: list[tuple[str, str, dict[str, Any], object, str | None]] = [
    # (name, specialist, item, read paths, code)
    ("the base repository card", "repository_discovery", CONFTEST_CARD, ALL, None),
    ("another node's reference only", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-review-1", "repository:tests/conftest.py"]),
     ALL, "attribution:no_own_evidence"),
    ("a substring identifier", "repository_discovery",
     _with(CONFTEST_CARD, assoc_identifiers=["FEATURE_FLAGS"],
           references=["exec:ex-implement-1a3", "repository:src/app/config.py"]),
     ALL, "source:identifier_not_in_cited_file"),
    ("a ./ path", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-implement-1a3", "repository:./tests/conftest.py"]),
     ALL, None),
    ("a position after the path", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-implement-1a3", "repository:tests/conftest.py:9"]),
     ALL, "references:repository_position"),
    ("the run id in the card", "repository_discovery",
     _with(CONFTEST_CARD, title="Seen in run-20250601-retry-and-review: clear APP_ variables"),
     ALL, "card:card_names_run_evidence"),
    ("an execution id in the card", "repository_discovery",
     _with(CONFTEST_CARD, recommendation="As ex-implement-1a3 found, read APP_ names only."),
     ALL, "card:card_names_run_evidence"),
    ("a receipt number in the card", "repository_discovery",
     _with(CONFTEST_CARD, recommendation="Receipt 7 shows the fixture; read settings from APP_."),
     ALL, "card:card_names_run_evidence"),
    ("a citation the session never read", "repository_discovery", CONFTEST_CARD,
     frozenset({"src/app/config.py"}), "source:cited_file_unread"),
    ("a broad folder", "repository_discovery", _with(CONFTEST_CARD, assoc_folders=["tests"]),
     ALL, "source:folder_too_broad"),
    ("the root as a folder", "repository_discovery", _with(CONFTEST_CARD, assoc_folders=["./"]),
     ALL, "source:folder_too_broad"),
    ("a path outside the checkout", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-implement-1a3", "repository:../outside"]),
     ALL, "references:repository_path_invalid"),
    ("an absolute path", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-implement-1a3", "repository:/etc/passwd"]),
     ALL, "references:repository_path_invalid"),
    ("a home path", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-implement-1a3",
                                      "repository:~/projects/order-service/tests/conftest.py"]),
     ALL, "references:repository_path_invalid"),
    ("a path through ..", "repository_discovery",
     _with(CONFTEST_CARD,
           references=["exec:ex-implement-1a3", "repository:src/../tests/conftest.py"]),
     ALL, "references:repository_path_invalid"),
    ("a Windows path", "repository_discovery",
     _with(CONFTEST_CARD, references=["exec:ex-implement-1a3", "repository:tests\\conftest.py"]),
     ALL, "references:repository_path_invalid"),
    ("an evidence file", "repository_discovery",
     _with(CONFTEST_CARD, references=[*CONFTEST_CARD["references"], "evidence:runtime.json"]),
     ALL, "references:malformed_reference"),
    ("a ./ association", "repository_discovery",
     _with(CONFTEST_CARD, assoc_files=["./tests/conftest.py"]), ALL, "card:files_invalid"),
    ("a one-letter identifier", "repository_discovery",
     _with(CONFTEST_CARD, assoc_identifiers=["x"]), ALL, "card:identifiers_invalid"),
    ("exec: in a code span", "repository_discovery",
     _with(CONFTEST_CARD, recommendation="Never cite `exec:` ids; read every setting from APP_."),
     ALL, "card:card_names_run_evidence"),
    ("the base graph card", "graph_discovery", REVIEW_CARD, ALL, None),
    ("a reviewer lesson on the worker's output only", "graph_discovery",
     _with(REVIEW_CARD, references=["exec:ex-implement-2", "receipt:17"]),
     ALL, "attribution:no_own_evidence"),
    ("graph evidence alone", "graph_discovery", _with(REVIEW_CARD, references=["graph:review"]),
     ALL, "references:no_run_evidence"),
    ("a node not in the graph", "graph_discovery",
     _with(REVIEW_CARD, node_id="collect"), ALL, "scope:node_unknown"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("specialist", "item", "read", "code"),
    [probe[1:] for probe in PROBES],
    ids=[probe[0] for probe in PROBES],
)
def test_a_probe_gets_the_code_the_prompt_predicts(
    runs: dict[str, Prepared], specialist: str, item: dict[str, Any], read: object, code: str | None
) -> None:
    prepared = runs["retry-and-review"]
    paths = prepared.files if read is ALL else read
    assert isinstance(paths, frozenset)
    result = _admit(prepared, specialist, {"lessons": [item]}, paths)
    assert _codes(result) == ([code] if code else [])
    if code is not None:
        assert code in _prompt_codes(specialist), f"the prompt states no rule refused as {code}"


def test_a_dot_slash_reference_is_stored_normalised(runs: dict[str, Prepared]) -> None:
    prepared = runs["retry-and-review"]
    dotted = ["exec:ex-implement-1a3", "repository:./tests/conftest.py"]
    item = _with(CONFTEST_CARD, references=dotted)
    result = _admit(prepared, "repository_discovery", {"lessons": [item]}, prepared.files)
    assert isinstance(result, DiscoveryResult)
    [admitted] = result.proposals
    assert admitted.proposal.draft.evidence.references == (
        "exec:ex-implement-1a3", "repository:tests/conftest.py"
    )  # fmt: skip


def _maintenance_probe(prepared: Prepared, **changes: Any) -> dict[str, Any]:
    decisions = [
        {"id": lesson.id, "action": "defer", "reason": "Cannot judge it from this run.",
         "references": ["exec:ex-implement-1", "repository:tests/conftest.py"],
         "replacement": None}
        for lesson in prepared.lessons
        if lesson.scope.kind == "repository"
    ]  # fmt: skip
    decisions[0].update(changes)
    return {"decisions": decisions}


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({}, None),
        ({"references": ["exec:ex-implement-1", "repository:tests/conftest.py:9"]},
         "references:repository_position"),
        ({"references": ["exec:ex-implement-1", "repository:./tests/conftest.py"]}, None),
        # The second run's checkout lost the card's feature_flags (the recorded model adapted it).
        ({"action": "keep"}, "source:association_gone"),
    ],
    ids=["defer", "a position after the path", "a ./ path", "keep of a card gone stale"],
)  # fmt: skip
def test_a_maintenance_probe_gets_the_code_the_prompt_predicts(
    runs: dict[str, Prepared], changes: dict[str, Any], code: str | None
) -> None:
    prepared = runs["clean-success"]
    answer = _maintenance_probe(prepared, **changes)
    result = _admit(prepared, "repository_maintenance", answer, prepared.files)
    assert _codes(result) == ([code] if code else [])
    if code is not None:
        assert code in _prompt_codes("repository_maintenance")


def test_deciding_a_delivered_id_instead_of_a_supplied_one_fails_coverage(
    runs: dict[str, Prepared],
) -> None:
    prepared = runs["clean-success"]
    answer = _maintenance_probe(prepared, id="lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B")
    result = _admit(prepared, "repository_maintenance", answer, prepared.files)
    assert isinstance(result, MaintenanceResult)
    assert not result.complete
    assert set(_codes(result)) == {"coverage:foreign_id", "coverage:missing_id"}
    assert {"coverage:foreign_id", "coverage:missing_id"} <= _prompt_codes("repository_maintenance")


@pytest.mark.parametrize(
    ("identifier", "code"),
    [
        ("_ENDPOINT", None),  # whole word in billing.py, besides inside APP_BILLING_ENDPOINT
        ("BILLING_ENDPOINT", "source:identifier_not_in_cited_file"),  # only inside a longer name
    ],
)
def test_one_whole_word_occurrence_is_enough_for_an_identifier(
    runs: dict[str, Prepared], identifier: str, code: str | None
) -> None:
    """The blind model's ambiguity: ``_ENDPOINT`` also occurs inside ``APP_BILLING_ENDPOINT``."""
    prepared = runs["map-verbose-reviewer"]
    fixture = json.loads((ANSWERS / "map-verbose-reviewer/repository_discovery.json").read_text())
    item = copy.deepcopy(fixture["answer"]["lessons"][0])
    item["associations"]["identifiers"] = [identifier]
    result = _admit(prepared, "repository_discovery", {"lessons": [item]}, prepared.files)
    assert _codes(result) == ([code] if code else [])


def test_the_prompt_says_evidence_files_are_not_references(runs: dict[str, Prepared]) -> None:
    """The blind model's question (may runtime.json be cited?): the preamble answers it, and
    admission agrees."""
    package = shipped_folder("prompts")
    preamble = " ".join(package.joinpath("preamble.md").read_text("utf-8").split())
    assert "there is no `evidence:` form" in preamble
    prepared = runs["retry-and-review"]
    item = _with(CONFTEST_CARD, references=[*CONFTEST_CARD["references"], "evidence:runtime.json"])
    result = _admit(prepared, "repository_discovery", {"lessons": [item]}, prepared.files)
    assert _codes(result) == ["references:malformed_reference"]
