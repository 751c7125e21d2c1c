"""A session that admits item errors returns, after its one repair turn, an answer whose contract
errors all lie inside items: host admission refuses those items alone."""

from __future__ import annotations

import time
from typing import Any

import pytest

from active_memory.admission import wire_schema
from active_memory.agents.providers.base import AnswerContract
from active_memory.agents.tool_loop import Session, check_answer
from active_memory.errors import ContractViolation
from active_memory.models.runs import Binding
from active_memory.testing import ScriptedProvider, answer_response

BINDING = Binding(provider="scripted", model="model-x")
CONTRACT = AnswerContract(name="graph_discovery", schema=wire_schema("graph_discovery"))


def _lesson(**changes: Any) -> dict[str, Any]:
    base = {"title": "Read the error first", "recommendation": "Read the last tool output.",
            "associations": None, "node_id": "build", "references": ["exec:e1"],
            "reason": "The retry repeated the step.", "repository_specific": False}  # fmt: skip
    return {**base, **changes}


ITEM_ERROR = {"lessons": [_lesson(), _lesson(associations={}), _lesson(title="Another")]}


def _session(provider: ScriptedProvider, *, admitted: bool) -> Session:
    return Session(provider, BINDING, system="sys", prompt="Discover.", contract=CONTRACT,
                   deadline=time.monotonic() + 30, item_errors_admitted=admitted)  # fmt: skip


def test_item_confined_errors_are_told_apart_from_whole_answer_errors() -> None:
    confined = check_answer(CONTRACT, answer_response(ITEM_ERROR).answer or "")
    assert confined.value is None
    assert confined.items_only == ITEM_ERROR
    assert confined.errors == ("lessons/1/associations: {} is not of type 'null'",)
    whole = check_answer(CONTRACT, answer_response({**ITEM_ERROR, "notes": "x"}).answer or "")
    assert (whole.value, whole.items_only) == (None, None)


async def test_after_the_repair_turn_an_item_error_no_longer_fails_the_session() -> None:
    provider = ScriptedProvider([answer_response(ITEM_ERROR), answer_response(ITEM_ERROR)])
    result = await _session(provider, admitted=True).run()
    assert (result.repaired, result.turns) == (True, 2)
    assert result.answer == ITEM_ERROR
    assert result.item_errors == ("lessons/1/associations: {} is not of type 'null'",)


async def test_the_repair_turn_is_still_asked_first() -> None:
    fixed = {"lessons": [_lesson()]}
    provider = ScriptedProvider([answer_response(ITEM_ERROR), answer_response(fixed)])
    result = await _session(provider, admitted=True).run()
    assert (result.repaired, result.answer, result.item_errors) == (True, fixed, ())


@pytest.mark.parametrize(
    ("admitted", "second"),
    [(False, ITEM_ERROR), (True, {**ITEM_ERROR, "notes": "x"})],
    ids=["not admitted", "whole-answer error"],
)
async def test_otherwise_a_second_invalid_answer_still_fails(
    admitted: bool, second: dict[str, Any]
) -> None:
    provider = ScriptedProvider([answer_response(ITEM_ERROR), answer_response(second)])
    with pytest.raises(ContractViolation):
        await _session(provider, admitted=admitted).run()
