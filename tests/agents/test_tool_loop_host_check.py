"""A host check of a contract-valid answer uses the session's one repair turn: its heading and
problems are sent once; whatever the repaired answer is, it is returned for admission, and a
repaired answer that breaks the contract gives way to the valid one before it."""

from __future__ import annotations

import time
from typing import Any

from active_memory.admission import wire_schema
from active_memory.agents.providers.base import AnswerContract, ToolResult, UserMessage
from active_memory.agents.tool_loop import HostCheck, Session
from active_memory.models.runs import Binding
from active_memory.testing import ScriptedProvider, answer_response

BINDING = Binding(provider="scripted", model="model-x")
ROLE = "repository_maintenance"
CONTRACT = AnswerContract(name=ROLE, schema=wire_schema(ROLE))
DEAD = "lesson-01JWNF15X00000000000000003"
HEADING = "Your answer keeps lessons whose files are gone from the checkout:"


def _answer(action: str) -> dict[str, Any]:
    return {"decisions": [{"id": DEAD, "action": action, "reason": "The file moved.",
                           "references": [], "replacement": None}]}  # fmt: skip


def _gone(answer: dict[str, Any]) -> tuple[str, ...]:
    """Stands in for admission: a keep of DEAD is what it would refuse."""
    return tuple(
        f"{d['id']}: keep refused (source:association_gone): adapt the card to what the "
        "checkout has now, or retire it"
        for d in answer["decisions"]
        if d["action"] == "keep"
    )


def _session(provider: ScriptedProvider, check: HostCheck | None) -> Session:
    return Session(provider, BINDING, system="sys", prompt="Maintain.", contract=CONTRACT,
                   deadline=time.monotonic() + 30, host_check=check)  # fmt: skip


def _last_text(provider: ScriptedProvider) -> str:
    message = provider.requests[-1].messages[-1]
    assert isinstance(message, UserMessage | ToolResult)
    return message.text if isinstance(message, UserMessage) else message.content


async def test_a_kept_dead_card_gets_the_repair_turn_and_is_retired() -> None:
    provider = ScriptedProvider(
        [answer_response(_answer("keep")), answer_response(_answer("retire"))]
    )
    result = await _session(provider, HostCheck(HEADING, _gone)).run()
    assert (result.repaired, result.turns, result.answer) == (True, 2, _answer("retire"))
    repair = _last_text(provider)
    assert repair.startswith(f"{HEADING}\n- {DEAD}: keep refused (source:association_gone)")
    assert "adapt the card to what the checkout has now, or retire it" in repair
    assert repair.endswith(
        "Give the complete corrected answer now; do not call investigation tools."
    )
    assert provider.requests[-1].final  # no more investigation


async def test_kept_again_after_the_repair_the_answer_is_returned_as_is() -> None:
    provider = ScriptedProvider(
        [answer_response(_answer("keep")), answer_response(_answer("keep"))]
    )
    result = await _session(provider, HostCheck(HEADING, _gone)).run()
    assert (result.repaired, result.turns, result.answer) == (True, 2, _answer("keep"))


async def test_a_repaired_answer_that_breaks_the_contract_gives_way_to_the_valid_one() -> None:
    broken = {"decisions": [{"id": DEAD, "action": "retire"}]}
    provider = ScriptedProvider([answer_response(_answer("keep")), answer_response(broken)])
    result = await _session(provider, HostCheck(HEADING, _gone)).run()
    assert (result.repaired, result.turns, result.answer) == (True, 2, _answer("keep"))


async def test_no_problems_or_no_check_means_no_extra_turn() -> None:
    for check in (HostCheck(HEADING, _gone), None):
        provider = ScriptedProvider([answer_response(_answer("retire" if check else "keep"))])
        result = await _session(provider, check).run()
        assert (result.repaired, result.turns) == (False, 1)


async def test_after_a_contract_repair_the_host_check_is_not_asked() -> None:
    asked: list[dict[str, Any]] = []

    def gone(answer: dict[str, Any]) -> tuple[str, ...]:
        asked.append(answer)
        return _gone(answer)

    provider = ScriptedProvider(
        [answer_response({"decisions": "x"}), answer_response(_answer("keep"))]
    )
    result = await _session(provider, HostCheck(HEADING, gone)).run()
    assert (result.repaired, result.answer, asked) == (True, _answer("keep"), [])
