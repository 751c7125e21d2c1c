"""A small model on a compatible server, through a real SDK adapter: its call written as text is
taken as the call, and the report and the run log say so, with the model the server answered
as beside the one asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.runlog import RunLog, read_events
from agents.doubles import MockAPI, chat_completion
from postmortem.postmortem_kit import config_of, first_run, store_at

pytestmark = pytest.mark.timeout(60)

SMALL_MODEL = "qwen2.5-coder-1.5b-instruct"
LISTING = json.dumps({"name": "list_folder", "arguments": {"root": "evidence", "path": ""}})


def _event(events: list[dict[str, Any]], kind: str, **match: Any) -> dict[str, Any]:
    return next(
        e for e in events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())
    )


@pytest.mark.parametrize(("text_calls", "expected"), [(None, 1), (False, 0)])
async def test_a_text_form_call_is_run_and_counted_in_the_report_and_the_run_log(
    text_calls: bool | None, expected: int, tmp_path: Path
) -> None:
    api = MockAPI()
    api.reply(chat_completion(content=f"```json\n{LISTING}\n```", model=SMALL_MODEL))
    answer = [("c2", "graph_discovery", json.dumps({"lessons": []}))]
    api.reply(chat_completion(tool_calls=answer, finish_reason="tool_calls", model=SMALL_MODEL))
    provider = OpenAIProvider(
        lane="compatible", endpoint=Endpoint("local", None, None, "http://127.0.0.1:8080/v1", None),
        env={}, http_client=api.client(), retry=RetryPolicy(max_attempts=1), text_calls=text_calls,
    )  # fmt: skip
    _, record = first_run(tmp_path)
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=config_of(repository=False), backend=store, private_dir=tmp_path / "evidence",
            provider=provider, run_log=RunLog(tmp_path / "log.jsonl"), new_id=sequential_ids(),
        ))  # fmt: skip
    events = read_events(tmp_path / "log.jsonl")

    discovery = report.specialist("graph_discovery")
    assert discovery.text_calls == expected
    assert discovery.answered_model == SMALL_MODEL
    assert report.answered_model == SMALL_MODEL
    assert report.model == "claude-sonnet-4-5"  # what the binding asked for, kept apart
    logged = _event(events, "postmortem_specialist", role="graph_discovery")
    assert (logged["text_calls"], logged["answered_model"]) == (expected, SMALL_MODEL)
    summary = _event(events, "postmortem")
    assert (summary["model"], summary["answered_model"]) == ("claude-sonnet-4-5", SMALL_MODEL)
    if expected:
        # The listing went back as the call's result, and the session then answered.
        assert api.body(1)["messages"][-1]["role"] == "tool"
        assert discovery.status == "nothing_to_do"
    else:
        # Off: the text was the answer in the tool mode, broke the contract, was repaired.
        repair = api.body(1)["messages"][-1]
        assert repair["role"] == "user"
        assert "does not satisfy the graph_discovery contract" in repair["content"]
