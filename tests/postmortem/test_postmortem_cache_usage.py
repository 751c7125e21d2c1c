"""Cached and uncached input tokens, from the provider's response to the report and the run log.

A real SDK adapter on the wire: the Anthropic lane reports ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` beside ``input_tokens`` (which excludes both); the OpenAI-style
lanes report ``prompt_tokens_details.cached_tokens`` inside ``prompt_tokens``. The postmortem's
report (JSON and text) and its run log carry, per specialist and in total, every input token
and the part the cache served.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.cli._report_text import format_report
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.runlog import RunLog, read_events
from agents.doubles import FakeSleep, MockAPI, anthropic_message, chat_completion, tool_use
from postmortem.postmortem_kit import config_of, first_run, store_at

pytestmark = pytest.mark.timeout(60)

EMPTY = {"lessons": []}


async def _postmortem(
    tmp_path: Path, provider: Any
) -> tuple[PostmortemReport, list[dict[str, Any]]]:
    """Graph scope only: graph discovery is the one session (maintenance has no lessons)."""
    _, record = first_run(tmp_path)
    log = RunLog(tmp_path / "log.jsonl")
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=config_of(repository=False), backend=store, private_dir=tmp_path / "evidence",
            provider=provider, run_log=log, new_id=sequential_ids(),
        ))  # fmt: skip
    return report, read_events(tmp_path / "log.jsonl")


def _logged(events: list[dict[str, Any]], event: str, role: str | None = None) -> dict[str, Any]:
    return next(e for e in events if e["event"] == event and e.get("role", role) == role)


def _check(report: PostmortemReport, events: list[dict[str, Any]], read: int, total: int) -> None:
    assert report.status == "completed", report.reason
    discovery = report.specialist("graph_discovery")
    assert (discovery.input_tokens, discovery.cache_read_tokens) == (total, read)
    totals = report.model_dump(mode="json")["totals"]
    assert (totals["input_tokens"], totals["cache_read_tokens"]) == (total, read)
    logged = _logged(events, "postmortem_specialist", "graph_discovery")
    assert (logged["input_tokens"], logged["cache_read_tokens"]) == (total, read)
    summary = _logged(events, "postmortem")
    assert (summary["input_tokens"], summary["cache_read_tokens"]) == (total, read)
    lines = format_report(report)
    header = next(line for line in lines if "tokens in/out" in line)
    row = next(line for line in lines if line.startswith("  graph_discovery"))
    assert "cached" in header
    assert f" {read}/{total - read} " in row.split("/", 1)[1]  # cached/uncached


async def test_anthropic_cache_reads_and_writes_reach_the_report_and_the_run_log(
    tmp_path: Path,
) -> None:
    api = MockAPI()
    api.reply(
        anthropic_message(
            tool_use("list_folder", {"root": "evidence", "path": ""}, "toolu_1"),
            stop_reason="tool_use",
            usage={"input_tokens": 900, "output_tokens": 20, "cache_creation_input_tokens": 5000},
        )
    )
    api.reply(
        anthropic_message(
            tool_use("graph_discovery", EMPTY, "toolu_2"),
            stop_reason="tool_use",
            usage={"input_tokens": 150, "output_tokens": 30, "cache_read_input_tokens": 5900},
        )
    )
    provider = AnthropicProvider(
        env={"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"},
        http_client=api.client(),
        retry=RetryPolicy(max_attempts=1, sleep=FakeSleep()),
    )

    report, events = await _postmortem(tmp_path, provider)

    assert api.unused == 0
    # Every input token: uncached 900 + 150, written 5000, read 5900.
    _check(report, events, read=5900, total=900 + 5000 + 150 + 5900)
    discovery = report.specialist("graph_discovery")
    assert discovery.cache_write_tokens == 5000
    assert _logged(events, "postmortem_specialist", "graph_discovery")["cache_write_tokens"] == 5000
    # The wire carried the breakpoints that earned the cache read.
    assert "cache_control" in api.body(1)["system"][0]


async def test_openai_cached_prompt_tokens_reach_the_report_and_the_run_log(
    tmp_path: Path,
) -> None:
    api = MockAPI()
    api.reply(
        chat_completion(
            tool_calls=[("c1", "graph_discovery", json.dumps(EMPTY))],
            finish_reason="tool_calls",
            usage={
                "prompt_tokens": 7000,
                "completion_tokens": 40,
                "total_tokens": 7040,
                "prompt_tokens_details": {"cached_tokens": 6144},
            },
        )
    )
    endpoint = Endpoint("local", None, None, "http://127.0.0.1:8080/v1", None)
    provider = OpenAIProvider(
        lane="compatible",
        endpoint=endpoint,
        env={},
        http_client=api.client(),
        retry=RetryPolicy(max_attempts=1, sleep=FakeSleep()),
    )

    report, events = await _postmortem(tmp_path, provider)

    assert api.unused == 0
    _check(report, events, read=6144, total=7000)
