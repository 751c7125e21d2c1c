"""The references and attribution stages: only this run's observed evidence, for the right node."""

from __future__ import annotations

import pytest

from .builders import (
    Discover,
    Maintain,
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
    ("references", "code"),
    [
        (["exec:e-build-9"], "exec_unknown"),
        (["receipt:99"], "receipt_unknown"),
        (["exec:e-old"], "exec_imported"),
        (["receipt:4"], "receipt_imported"),
        (["exec:e-aux"], "exec_auxiliary"),
        (["receipt:5"], "receipt_auxiliary"),
        (["receipt:7"], "receipt_auxiliary"),
        (["receipt:first"], "malformed_reference"),
        (["https://example.invalid/run/1"], "malformed_reference"),
        (["exec:e-build-1", "exec:e-build-1"], "duplicate_reference"),
        (["exec:e-build-1", "source:" + "a" * 40], "source_reference_reserved"),
        (["exec:e-build-1", "graph:deploy"], "graph_node_unknown"),
        (["graph:build"], "no_run_evidence"),
        ([], "no_run_evidence"),
    ],
)
def test_discovery_citing_unobserved_evidence_is_rejected(
    discover: Discover, references: list[str], code: str
) -> None:
    result = discover("graph_discovery", graph_discovery(references=references))
    assert only_rejection(result) == ("references", code)


def test_discovery_citing_this_runs_completion_and_receipt_is_accepted(
    discover: Discover,
) -> None:
    references = ["exec:e-build-2", "receipt:1", "graph:build"]
    result = discover("graph_discovery", graph_discovery(references=references))
    assert result.rejections == ()
    evidence = result.proposals[0].proposal.draft.evidence
    assert evidence.run_id == "run-1"
    assert evidence.references == tuple(references)


def test_maintenance_decision_citing_unobserved_evidence_leaves_the_lesson(
    maintain: Maintain,
) -> None:
    lesson = graph_lesson()
    bad = decision(lesson, "retire", references=["exec:e-old"])
    result = maintain("graph_maintenance", [lesson], bad)
    assert result.complete  # coverage held; only this decision is refused
    assert only_rejection(result) == ("references", "exec_imported")
    assert result.mutations == ()


def test_adapt_without_references_is_rejected(maintain: Maintain) -> None:
    lesson = graph_lesson()
    result = maintain(
        "graph_maintenance", [lesson], decision(lesson, "adapt", replacement=graph_replacement())
    )
    assert only_rejection(result) == ("references", "no_references")


# --- attribution --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "references", "code"),
    [
        ("build", ["exec:e-build-1", "receipt:3"], "receipt_unattributed"),
        ("build", ["exec:e-review-1"], "no_own_evidence"),
        ("plan", ["exec:e-build-1", "receipt:6"], "no_own_evidence"),
        ("review", ["exec:e-build-2"], "no_own_evidence"),
    ],
)
def test_a_lesson_needs_evidence_of_its_own_node(
    discover: Discover, node: str, references: list[str], code: str
) -> None:
    result = discover("graph_discovery", graph_discovery(node_id=node, references=references))
    assert only_rejection(result) == ("attribution", code)


@pytest.mark.parametrize(
    ("node", "references"),
    [
        ("build", ["exec:e-build-1", "exec:e-plan-1"]),  # the plan it followed
        ("plan", ["exec:e-plan-1", "receipt:1"]),  # a receipt of the worker it planned for
        ("review", ["exec:e-review-1", "exec:e-build-2"]),  # the worker output it judged
        ("build", ["exec:e-build-1", "exec:e-review-early"]),
    ],
)
def test_other_nodes_evidence_is_allowed_beside_the_nodes_own(
    discover: Discover, node: str, references: list[str]
) -> None:
    result = discover("graph_discovery", graph_discovery(node_id=node, references=references))
    assert result.rejections == ()


def test_repository_discovery_citing_only_another_nodes_execution_is_rejected(
    discover: Discover,
) -> None:
    item = repo_discovery(references=["exec:e-plan-1", "repository:src/app/config.py"])
    assert only_rejection(discover("repository_discovery", item)) == (
        "attribution",
        "no_own_evidence",
    )


@pytest.mark.parametrize(
    "references",
    [
        ["exec:e-build-1", "exec:e-review-1"],  # the reviewer ran after the worker
        ["exec:e-build-2", "receipt:6"],  # a receipt of the reviewer's execution
        ["receipt:1"],  # the worker's own receipt alone
    ],
)
def test_own_and_later_reviewer_evidence_supports_a_worker_lesson(
    discover: Discover, references: list[str]
) -> None:
    result = discover("graph_discovery", graph_discovery(references=references))
    assert result.rejections == ()


def test_graph_maintenance_cannot_justify_a_change_with_another_nodes_work(
    maintain: Maintain,
) -> None:
    lesson = graph_lesson(node="plan")
    adapt = decision(
        lesson, "adapt", references=["exec:e-build-1"], replacement=graph_replacement()
    )
    result = maintain("graph_maintenance", [lesson], adapt)
    assert only_rejection(result) == ("attribution", "no_own_evidence")
    own = decision(
        lesson,
        "adapt",
        references=["exec:e-plan-1", "exec:e-build-1"],
        replacement=graph_replacement(),
    )
    accepted = maintain("graph_maintenance", [lesson], own)
    assert accepted.rejections == ()
    assert [m.op for m in accepted.mutations] == ["upsert"]


def test_repository_maintenance_does_not_need_node_attribution(maintain: Maintain) -> None:
    lesson = repo_lesson()
    adapt = decision(
        lesson,
        "adapt",
        references=["exec:e-plan-1", "repository:src/app/config.py"],
        replacement=replacement(),
    )
    assert maintain("repository_maintenance", [lesson], adapt).rejections == ()
