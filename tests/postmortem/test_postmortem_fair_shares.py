"""Each specialist under its fair share of the deadline: one that loops or hangs cannot spend
the others' time, and the time a finished one leaves goes to those still running."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.base import ModelRequest, ModelResponse, UserMessage
from active_memory.models.config import ActiveMemoryConfig, PostmortemConfig, RuntimeConfig
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.postmortem.shares import FairShares
from active_memory.runlog import RunLog, read_events
from active_memory.testing import ScriptedProvider, tool_call, tool_calls_response
from postmortem.postmortem_kit import (
    by_labels,
    decisions,
    discovered,
    first_run,
    graph_draft,
    seed,
    store_at,
)

pytestmark = pytest.mark.timeout(30)
LOOP_LINE = "I should look at the evidence file once more before I answer."
READ = {"root": "evidence", "path": "graph.json", "offset": None, "limit": None}


def test_each_specialist_starts_with_an_equal_share_of_the_time() -> None:
    shares = FairShares(["a", "b", "c", "d"], started=100.0, deadline=200.0)

    assert [shares.deadline(name) for name in "abcd"] == [125.0, 125.0, 125.0, 125.0]


def test_time_a_settled_specialist_left_goes_to_those_still_running() -> None:
    shares = FairShares(["a", "b", "c"], started=0.0, deadline=90.0)
    read_c = shares.of("c")

    shares.settle("a", at=10.0)  # 20 s unused, 10 s each for b and c
    assert (shares.deadline("b"), read_c()) == (40.0, 40.0)
    shares.settle("b", at=40.0)  # cut at its share: nothing left over
    shares.settle("b", at=1.0)  # settling twice changes nothing
    assert read_c() == 40.0


def test_no_share_passes_the_whole_deadline() -> None:
    shares = FairShares(["a", "b"], started=0.0, deadline=10.0)
    shares.settle("a", at=0.0)
    assert shares.deadline("b") == 10.0


def _config(timeout_ms: int) -> RuntimeConfig:
    return RuntimeConfig(
        active_memory=ActiveMemoryConfig(),
        postmortem=PostmortemConfig(
            timeout_ms=timeout_ms,
            answer_tokens=4_096,
            investigation_tokens=1_024,
            reasoning_tokens=0,
        ),
    )


async def _looping(request: ModelRequest) -> ModelResponse:
    """A small model in a loop: one line again and again until the turn's cap stops it."""
    lines = request.max_tokens * 4 // (len(LOOP_LINE) + 1)
    return ModelResponse(text=(LOOP_LINE + "\n") * lines, stop_reason="max_tokens")


async def _after(seconds: float, response: ModelResponse) -> ModelResponse:
    await asyncio.sleep(seconds)
    return response


async def _postmortem(
    tmp_path: Path, script: dict[tuple[str, int, int], Any], timeout_ms: int
) -> tuple[PostmortemReport, ScriptedProvider, list[dict[str, Any]]]:
    _, record = first_run(tmp_path)
    lesson_id = sequential_ids(1_700_000_000_000)()
    with store_at(tmp_path) as store:
        seed(store, (lesson_id, graph_draft(record, "Lesson one")))
    script[("graph_maintenance", 0, 1)] = tool_calls_response(tool_call("read_file", READ))
    script[("graph_maintenance", 0, 2)] = lambda request: _after(
        0.2, decisions((lesson_id, "keep"))
    )
    provider = ScriptedProvider(by_labels(script))
    log = RunLog(tmp_path / "log.jsonl")
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=_config(timeout_ms), backend=store, private_dir=tmp_path / "evidence",
            provider=provider, run_log=log, new_id=sequential_ids(),
        ))  # fmt: skip
    return report, provider, read_events(tmp_path / "log.jsonl")


async def test_a_model_repeating_a_line_is_cut_at_the_turn_cap_and_the_others_finish(
    tmp_path: Path,
) -> None:
    script: dict[tuple[str, int, int], Any] = {
        ("graph_discovery", 0, 1): _looping,
        ("graph_discovery", 0, 2): _looping,
        ("repository_discovery", 0, 1): lambda request: _after(0.1, discovered()),
    }
    started = time.monotonic()

    report, provider, events = await _postmortem(tmp_path, script, timeout_ms=20_000)

    assert time.monotonic() - started < 10
    looped = report.specialist("graph_discovery")
    assert (looped.status, looped.error_code) == ("failed", "repetitive_output")
    assert "repeated one span" in (looped.error or "")
    asked = [r for r in provider.requests if r.labels.specialist == "graph_discovery"]
    # Cut within the investigation turn's cap, then one repair turn that says why.
    assert [(r.max_tokens, r.final) for r in asked] == [(1_024, False), (4_096, True)]
    told = asked[1].messages[-1]
    assert isinstance(told, UserMessage)
    assert "repeated the same span" in told.text
    assert report.specialist("graph_maintenance").status == "nothing_to_do"  # a keep
    assert report.specialist("repository_discovery").status == "nothing_to_do"
    logged = next(e for e in events if e.get("role") == "graph_discovery")
    assert logged["error_code"] == "repetitive_output"


async def test_a_hanging_specialist_is_cut_at_its_share_and_the_others_finish(
    tmp_path: Path,
) -> None:
    async def hang(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(60)
        raise AssertionError("unreachable: its share of the deadline stops this call")

    script: dict[tuple[str, int, int], Any] = {
        ("graph_discovery", 0, 1): hang,
        ("repository_discovery", 0, 1): lambda request: _after(0.2, discovered()),
    }
    started = time.monotonic()

    report, _, _ = await _postmortem(tmp_path, script, timeout_ms=2_000)

    assert time.monotonic() - started < 4
    hung = report.specialist("graph_discovery")
    assert (hung.status, hung.error_code) == ("timed_out", "timed_out")
    # A call still waiting when the share ends is the server's silence, cut at the share.
    assert "did not answer" in (hung.error or "")
    assert "its share of the postmortem deadline" in (hung.error or "")
    assert report.specialist("graph_maintenance").status == "nothing_to_do"
    assert report.specialist("repository_discovery").status == "nothing_to_do"
