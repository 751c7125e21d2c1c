"""A shape error confined to one item refuses that item alone; identical items are one item.

Only a malformed whole (not an object, a missing or foreign top-level key, a list that is not
a list, too large) refuses the answer. For maintenance a malformed decision whose id reads
still counts for coverage: it is a refused decision for that id, its lesson untouched.
"""

from __future__ import annotations

from typing import Any

import pytest

from active_memory.admission.validate import AdmissionContext, admit_discovery, admit_maintenance
from active_memory.models.changes import Rejection

from .builders import (
    Discover,
    Maintain,
    decision,
    graph_discovery,
    graph_lesson,
    graph_replacement,
    repo_discovery,
)


def _lessons(count: int) -> list[dict[str, Any]]:
    return [
        graph_discovery(title=f"Check the error exit before retry {n}", reason=f"Seen {n}.")
        for n in range(count)
    ]


def test_one_malformed_lesson_costs_only_itself(discover: Discover) -> None:
    lessons = _lessons(11)
    lessons[4]["associations"] = {}  # the contract says null for a graph lesson
    result = discover("graph_discovery", *lessons)
    assert result.complete
    assert result.rejections == (
        Rejection(stage="shape", role="graph_discovery", code="schema_type", index=4),
    )
    assert [item.index for item in result.proposals] == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]


@pytest.mark.parametrize(
    ("item", "code"),
    [
        ("not an object", "schema_type"),
        ({k: v for k, v in graph_discovery().items() if k != "reason"}, "schema_required"),
        ({**graph_discovery(), "extra": 1}, "schema_additionalProperties"),
        (graph_discovery(repository_specific="yes"), "schema_type"),
    ],
    ids=["not an object", "missing key", "extra key", "wrong type"],
)
def test_each_kind_of_malformed_item_is_refused_alone(
    discover: Discover, item: Any, code: str
) -> None:
    good = graph_discovery(title="Read the last tool output first")
    result = discover("graph_discovery", item, good)
    assert [(r.stage, r.code, r.index) for r in result.rejections] == [("shape", code, 0)]
    assert [admitted.index for admitted in result.proposals] == [1]


@pytest.mark.parametrize(
    "answer",
    [
        {},
        {"lessons": [graph_discovery()], "notes": "x"},
        {"lessons": {"0": graph_discovery()}},
        ["lessons"],
    ],
    ids=["no lessons key", "foreign top-level key", "lessons not a list", "not an object"],
)
def test_a_malformed_whole_still_refuses_the_answer(context: AdmissionContext, answer: Any) -> None:
    result = admit_discovery(answer, "graph_discovery", context)
    assert not result.complete
    assert result.proposals == ()
    assert {(r.stage, r.index) for r in result.rejections} == {("shape", -1)}


def test_identical_lessons_are_one_lesson(discover: Discover) -> None:
    other = repo_discovery(title="Settings load once per process")
    result = discover("repository_discovery", repo_discovery(), other, repo_discovery())
    assert [item.index for item in result.proposals] == [0, 1]
    assert result.rejections == (
        Rejection(stage="shape", role="repository_discovery", code="duplicate_item", index=2),
    )


def test_the_same_card_argued_twice_is_one_lesson(discover: Discover) -> None:
    again = repo_discovery(
        reason="Seen again in the second attempt.", references=["exec:e-build-1"]
    )
    reworded = repo_discovery(recommendation="Call load_settings again after changing defaults.")
    result = discover("repository_discovery", repo_discovery(), again, reworded)
    assert [item.index for item in result.proposals] == [0, 2]
    assert result.rejections == (
        Rejection(stage="shape", role="repository_discovery", code="duplicate_item", index=1),
    )


ONE, TWO, THREE = graph_lesson(101), graph_lesson(102), graph_lesson(103)
ROLE = "graph_maintenance"


def test_a_malformed_decision_is_refused_for_its_id_and_the_rest_publish(
    maintain: Maintain,
) -> None:
    bad = decision(TWO, "adapt", references=["exec:e-build-1"],
                   replacement={**graph_replacement(), "associations": {}})  # fmt: skip
    result = maintain(
        ROLE, [ONE, TWO, THREE], decision(ONE, "retire", references=["exec:e-build-1"]), bad,
        decision(THREE),
    )  # fmt: skip
    assert result.complete
    assert result.rejections == (
        Rejection(stage="shape", role=ROLE, code="schema_anyOf", index=1, id=TWO.id),
    )
    assert [(item.id, item.applied) for item in result.decisions] == [
        (ONE.id, "defer"),  # the adapt that did not publish may have absorbed it
        (THREE.id, "keep"),
    ]
    assert [(d.id, d.reason) for d in result.downgrades] == [(ONE.id, "related_adapt_not_applied")]
    assert result.mutations == ()


def test_a_malformed_decision_without_a_readable_id_leaves_its_lesson_missing(
    maintain: Maintain,
) -> None:
    result = maintain(ROLE, [ONE, TWO], decision(ONE), {**decision(TWO), "id": 7})
    assert not result.complete
    assert [(r.stage, r.code, r.index, r.id) for r in result.rejections] == [
        ("shape", "schema_type", 1, None),
        ("coverage", "missing_id", -1, TWO.id),
    ]


def test_identical_decisions_are_one_decision(maintain: Maintain) -> None:
    result = maintain(ROLE, [ONE, TWO], decision(ONE), decision(TWO), decision(ONE))
    assert result.complete
    assert [(item.id, item.applied) for item in result.decisions] == [
        (ONE.id, "keep"),
        (TWO.id, "keep"),
    ]
    assert result.rejections == (
        Rejection(stage="shape", role=ROLE, code="duplicate_item", index=2, id=ONE.id),
    )


def test_identical_malformed_decisions_are_one_refused_decision(maintain: Maintain) -> None:
    # Said twice, a malformed decision is still one decision: the repeat must not count again
    # for coverage (duplicate_id would fail the whole reconciliation).
    bad = decision(TWO, "adapt", references=["exec:e-build-1"],
                   replacement={**graph_replacement(), "associations": {}})  # fmt: skip
    result = maintain(ROLE, [ONE, TWO], decision(ONE), bad, bad)
    assert result.complete
    assert [(r.code, r.index, r.id) for r in result.rejections] == [
        ("schema_anyOf", 1, TWO.id),
        ("duplicate_item", 2, TWO.id),
    ]
    assert [(item.id, item.applied) for item in result.decisions] == [(ONE.id, "keep")]


def test_a_malformed_whole_still_fails_the_reconciliation(context: AdmissionContext) -> None:
    answer = {"decisions": [decision(ONE)], "summary": "all kept"}
    result = admit_maintenance(answer, ROLE, [ONE], context)
    assert not result.complete
    assert result.decisions == ()
    assert [(r.code, r.index) for r in result.rejections] == [("schema_additionalProperties", -1)]
