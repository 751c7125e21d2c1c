"""The live conformance check against the loopback stand-in, over real sockets, in every mode.

The stand-in is no model (see ``loopback_model.py``): this proves the check and the whole path
behind it (CLI-equivalent override, registry, SDK, HTTP, tool loop, admission) work, so a run
against a real local server tests the server and not the harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.loopback_model import minimal_instance, serving
from agents.test_live_conformance import assert_conformant, run_live_check

pytestmark = pytest.mark.timeout(60)

CASES = [
    pytest.param(lane, output, id=f"{lane}-{output or 'default'}")
    for lane in ("compatible", "anthropic")
    for output in (None, "tool", "native", "prompted")
]


@pytest.mark.parametrize(("lane", "output"), CASES)
async def test_the_live_check_passes_against_the_stand_in(
    lane: str, output: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving() as stand_in:
        base_url = f"{stand_in.url}/v1" if lane == "compatible" else stand_in.url
        result = await run_live_check(
            tmp_path, monkeypatch, base_url=base_url, model="stand-in", lane=lane, output=output
        )
        seen = stand_in.seen
    assert_conformant(result)
    path = "/v1/chat/completions" if lane == "compatible" else "/v1/messages"
    assert {p for p, _ in seen} == {path}
    assert len(seen) == result.turns
    assert result.host is not None
    assert result.host.startswith("127.0.0.1:")
    assert result.lane == lane
    assert result.output == output or (output is None and result.output == "tool")


async def test_the_live_check_sends_the_named_key_and_only_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "fake-hosted-key-never-sent")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-hosted-key-never-sent")
    with serving() as stand_in:
        keyed = await run_live_check(
            tmp_path / "keyed",
            monkeypatch,
            base_url=f"{stand_in.url}/v1",
            model="stand-in",
            lane="compatible",
            api_key="fake-local-key",
        )
        keys = {key for _, key in stand_in.seen}
        unkeyed = await run_live_check(
            tmp_path / "unkeyed", monkeypatch, base_url=stand_in.url, model="stand-in",
            lane="anthropic",
        )  # fmt: skip
        later = {key for _, key in stand_in.seen} - keys
    assert_conformant(keyed)
    assert_conformant(unkeyed)
    assert keys == {"Bearer fake-local-key"}
    assert all("never-sent" not in (key or "") for key in later)


@pytest.mark.parametrize("output", [None, "native", "prompted"])
async def test_a_model_writing_its_calls_as_text_investigates_on_the_compatible_lane(
    output: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(text_calls=True) as stand_in:
        result = await run_live_check(
            tmp_path, monkeypatch, base_url=f"{stand_in.url}/v1", model="stand-in",
            lane="compatible", output=output,
        )  # fmt: skip
    assert_conformant(result)
    assert result.tool_calls >= 1
    # The investigation call, and in the tool mode the answer call too, came as text.
    assert result.text_calls == (2 if output is None else 1)
    assert result.answered_model == "stand-in"


async def test_without_text_calls_the_same_model_never_investigates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(text_calls=True) as stand_in:
        result = await run_live_check(
            tmp_path, monkeypatch, base_url=f"{stand_in.url}/v1", model="stand-in",
            lane="compatible", text_calls=False,
        )  # fmt: skip
    assert (result.tool_calls, result.text_calls) == (0, 0)
    assert result.error_code == "contract_violation"


def test_minimal_instances_satisfy_simple_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "b": {"type": ["string", "null"]},
            "c": {"enum": ["keep", "retire"]},
            "d": {"$ref": "#/$defs/n"},
        },
        "required": ["a", "b", "c", "d"],
        "$defs": {"n": {"type": "integer", "minimum": 3}},
    }
    assert minimal_instance(schema) == {"a": [""], "b": None, "c": "keep", "d": 3}
