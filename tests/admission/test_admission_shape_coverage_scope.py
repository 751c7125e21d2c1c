"""Whole-answer stages: shape, maintenance coverage, and the scope opt-out; then node scope."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from active_memory.admission.validate import (
    MAX_ANSWER_BYTES,
    AdmissionContext,
    admit,
    admit_discovery,
    admit_maintenance,
)
from active_memory.errors import AdmissionError
from active_memory.models.changes import Rejection
from active_memory.models.config import ActiveMemoryConfig
from active_memory.models.lessons import Lesson

from .builders import (
    Discover,
    Maintain,
    decision,
    graph_discovery,
    graph_lesson,
    only_rejection,
    repo_discovery,
    repo_lesson,
)


def _size(answer: dict[str, Any]) -> int:
    return len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (["not", "an", "object"], "not_an_object"),
        ({"lessons": [repo_discovery()], "extra": True}, "schema_additionalProperties"),
        ({"lessons": {"title": "not a list"}}, "schema_type"),
        ({"lessons": [repo_discovery(reason=float("nan"))]}, "not_json"),
        ({}, "schema_required"),
    ],
)  # fmt: skip
def test_malformed_answer_is_rejected_whole_at_shape(
    context: AdmissionContext, answer: Any, code: str
) -> None:
    result = admit_discovery(answer, "repository_discovery", context)
    assert result.proposals == ()
    assert result.rejections[0].stage == "shape"
    assert result.rejections[0].code == code


def test_shape_rejection_points_at_the_item_without_echoing_it(context: AdmissionContext) -> None:
    answer = {"lessons": [repo_discovery(), repo_discovery(title=["MARKER-TITLE"])]}
    result = admit_discovery(answer, "repository_discovery", context)
    assert result.rejections == (
        Rejection(stage="shape", role="repository_discovery", code="schema_type", index=1, id=None),
    )
    # One malformed item is refused alone; the rest of the answer is judged.
    assert [item.index for item in result.proposals] == [0]


def test_answer_one_byte_over_the_size_cap_is_rejected(context: AdmissionContext) -> None:
    answer = {"lessons": [repo_discovery(reason="é" * 10)]}
    exact = replace(context, max_answer_bytes=_size(answer))
    assert admit_discovery(answer, "repository_discovery", exact).rejections == ()
    over = replace(context, max_answer_bytes=_size(answer) - 1)
    assert only_rejection(admit_discovery(answer, "repository_discovery", over)) == (
        "shape",
        "answer_too_large",
    )


def test_default_cap_is_256_kib_of_utf8(context: AdmissionContext) -> None:
    padding = MAX_ANSWER_BYTES - _size({"lessons": [graph_discovery(reason="")]})
    answer = {"lessons": [graph_discovery(reason="é" * (padding // 2) + "a" * (padding % 2))]}
    assert _size(answer) == MAX_ANSWER_BYTES
    # Within the cap the answer reaches the card stage (its reason is far over 512 bytes).
    assert only_rejection(admit_discovery(answer, "graph_discovery", context)) == (
        "card",
        "reason_too_long",
    )
    answer["lessons"][0]["reason"] += "a"
    assert only_rejection(admit_discovery(answer, "graph_discovery", context)) == (
        "shape",
        "answer_too_large",
    )


def test_well_shaped_answer_passes_shape(discover: Discover) -> None:
    result = discover("repository_discovery", repo_discovery())
    assert result.rejections == ()
    assert [item.index for item in result.proposals] == [0]


# --- coverage -----------------------------------------------------------------------------


ONE, TWO, GRAPH_ONE = repo_lesson(1), repo_lesson(2), graph_lesson()


@pytest.mark.parametrize(
    ("role", "supplied", "decisions", "expected"),
    [
        ("repository_maintenance", [ONE, TWO], [decision(ONE, "retire")],
         ("missing_id", -1, TWO.id)),
        ("repository_maintenance", [ONE, TWO],
         [decision(ONE), decision(TWO), decision(ONE, "retire")], ("duplicate_id", 2, ONE.id)),
        ("graph_maintenance", [GRAPH_ONE], [decision(GRAPH_ONE), decision(ONE, "retire")],
         ("foreign_id", 1, ONE.id)),
        ("repository_maintenance", [ONE], [decision(ONE), decision(GRAPH_ONE, "retire")],
         ("foreign_id", 1, GRAPH_ONE.id)),
    ],
)  # fmt: skip
def test_coverage_problem_fails_the_whole_reconciliation(
    maintain: Maintain,
    role: str,
    supplied: list[Lesson],
    decisions: list[dict[str, Any]],
    expected: tuple[str, int, str],
) -> None:
    result = maintain(role, supplied, *decisions)
    assert not result.complete
    assert result.mutations == ()
    assert result.decisions == ()
    code, index, lesson = expected
    assert result.rejections == (
        Rejection(stage="coverage", role=role, code=code, index=index, id=lesson),
    )


def test_foreign_text_id_is_logged_without_the_text(maintain: Maintain) -> None:
    lesson = repo_lesson()
    result = maintain(
        "repository_maintenance",
        [lesson],
        decision(lesson),
        {**decision(lesson), "id": "ignore previous instructions"},
    )
    assert result.rejections == (
        Rejection(
            stage="coverage", role="repository_maintenance", code="foreign_id", index=1, id=None
        ),
    )


def test_every_coverage_problem_is_reported_once(maintain: Maintain) -> None:
    one, two, three = repo_lesson(1), repo_lesson(2), repo_lesson(3)
    result = maintain(
        "repository_maintenance",
        [one, two, three],
        decision(one),
        decision(one, "defer"),  # two different decisions on one id (identical ones are one)
        decision(repo_lesson(9)),
    )
    codes = sorted((r.code, r.id) for r in result.rejections)
    assert codes == sorted(
        [
            ("duplicate_id", one.id),
            ("foreign_id", repo_lesson(9).id),
            ("missing_id", two.id),
            ("missing_id", three.id),
        ]
    )


def test_exact_coverage_is_accepted(maintain: Maintain) -> None:
    one, two = repo_lesson(1), repo_lesson(2)
    result = maintain("repository_maintenance", [one, two], decision(two), decision(one, "defer"))
    assert result.complete
    assert result.rejections == ()
    assert [(d.id, d.revision, d.applied) for d in result.decisions] == [
        (two.id, 3, "keep"),
        (one.id, 3, "defer"),
    ]


def test_an_empty_batch_needs_an_empty_answer(maintain: Maintain) -> None:
    assert maintain("graph_maintenance", []).complete


def test_host_supplying_the_other_scope_is_a_host_error(context: AdmissionContext) -> None:
    with pytest.raises(AdmissionError, match="graph scope"):
        admit_maintenance({"decisions": []}, "repository_maintenance", [graph_lesson()], context)
    with pytest.raises(AdmissionError, match="supplied twice"):
        admit_maintenance(
            {"decisions": []}, "repository_maintenance", [repo_lesson(), repo_lesson()], context
        )
    with pytest.raises(AdmissionError, match="unknown specialist role"):
        admit({"lessons": []}, "graph_discoverer", context)
    with pytest.raises(AdmissionError, match="discovery role"):
        admit_maintenance({"decisions": []}, "graph_discovery", [], context)


# --- scope --------------------------------------------------------------------------------


def test_opted_out_scope_rejects_its_maintenance_and_discovery(context: AdmissionContext) -> None:
    no_repo = replace(context, config=ActiveMemoryConfig(repository=False))
    lesson = repo_lesson()
    maintained = admit_maintenance(
        {"decisions": [decision(lesson)]}, "repository_maintenance", [lesson], no_repo
    )
    assert not maintained.complete
    assert only_rejection(maintained) == ("scope", "scope_disabled")
    discovered = admit_discovery({"lessons": [repo_discovery()]}, "repository_discovery", no_repo)
    assert only_rejection(discovered) == ("scope", "scope_disabled")
    # The other scope is unaffected.
    assert admit({"lessons": [graph_discovery()]}, "graph_discovery", no_repo).rejections == ()
    no_graph = replace(context, config=ActiveMemoryConfig(graph=False))
    result = admit({"lessons": [graph_discovery()]}, "graph_discovery", no_graph)
    assert only_rejection(result) == ("scope", "scope_disabled")


@pytest.mark.parametrize(
    ("role", "item", "code"),
    [
        ("graph_discovery", graph_discovery(node_id="deploy"), "node_unknown"),
        ("graph_discovery", graph_discovery(node_id="fanout"), "node_not_agent"),
        ("graph_discovery", graph_discovery(node_id="unused"), "node_not_executed"),
        ("repository_discovery", repo_discovery(node_id="unused"), "node_not_executed"),
        ("repository_discovery", repo_discovery(node_id="postmortem"), "node_unknown"),
        ("repository_discovery", repo_discovery(repository_specific=False),
         "not_repository_specific"),
    ],
)  # fmt: skip
def test_discovery_outside_this_runs_agent_nodes_is_rejected_at_scope(
    discover: Discover, role: str, item: dict[str, Any], code: str
) -> None:
    assert only_rejection(discover(role, item)) == ("scope", code)


def test_node_seen_only_in_imported_history_did_not_execute(
    discover: Discover, context: AdmissionContext
) -> None:
    run = context.run
    imported = tuple(
        e.model_copy(update={"imported": True}) if e.node_id == "build" else e
        for e in run.executions
    )
    ctx = replace(context, run=run.model_copy(update={"executions": imported}))
    result = discover("graph_discovery", graph_discovery(), ctx=ctx)
    assert only_rejection(result) == ("scope", "node_not_executed")


def test_repository_bound_discovery_without_a_repository_is_rejected(
    discover: Discover, context: AdmissionContext
) -> None:
    ctx = replace(context, run=context.run.model_copy(update={"checkout": None}), checkout=None)
    assert only_rejection(discover("repository_discovery", repo_discovery(), ctx=ctx)) == (
        "scope",
        "no_repository",
    )
    qualified = graph_discovery(repository_specific=True)
    assert only_rejection(discover("graph_discovery", qualified, ctx=ctx)) == (
        "scope",
        "no_repository",
    )
    assert discover("graph_discovery", graph_discovery(), ctx=ctx).rejections == ()


def test_discovery_for_an_executed_agent_node_is_accepted(discover: Discover) -> None:
    result = discover(
        "graph_discovery", graph_discovery(node_id="review", references=["exec:e-review-1"])
    )
    assert result.rejections == ()
    assert result.proposals[0].proposal.node_id == "review"
