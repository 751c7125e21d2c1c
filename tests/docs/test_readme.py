"""README.md: the tour's demo output, the host snippet and the two JSON examples."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from active_memory.errors import ConfigError
from active_memory.models.config import parse_runtime_config
from active_memory.models.run_schema import shipped_schema
from active_memory.models.runs import Outcome, parse_run_record
from docs.compare import compare
from docs.conftest import Demo
from docs.pages import claim, output
from postmortem.postmortem_kit import first_run

PAGE = "README.md"
DEMO = output(PAGE, "demo")
HOST = claim(PAGE, "host")
RUN_JSON = claim(PAGE, "run-json")
RUNTIME_JSON = claim(PAGE, "runtime-json")


def test_the_tour_shows_the_demo_as_it_prints(demo_made: Demo) -> None:
    compare(DEMO, DEMO.body, demo_made.printed)


def test_the_host_snippet_runs_inside_asyncio_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside ``asyncio.run``, where ``hook_env`` used to raise "Cannot run the event loop while
    another loop is running"."""
    git = shutil.which("git")
    assert git is not None
    monkeypatch.setenv("PATH", str(Path(git).parent))
    assert shutil.which("claude") is None, "a claude beside git: this test cannot hide it"
    folder, record = first_run(tmp_path)
    snippet = HOST.body
    assert "run.hook_env(" in snippet
    assert "await run.postmortem(record)" in snippet
    namespace: dict[str, Any] = {
        "run_id": record.run_id,
        "graph": record.graph,
        "checkout": folder / "checkout",
        "node_id": "implement",
        "conversation_id": "conv-implement-1",
        "authored": "Edit the repository...",
        "outcome": Outcome(status="succeeded", latched_ms=1748772087000),
        "record": record,
    }
    code = "async def snippet():\n" + textwrap.indent(snippet, "    ") + "\n    return locals()\n"
    exec(compile(code, PAGE, "exec"), namespace)
    done = asyncio.run(namespace["snippet"]())
    assert done["env"]["ACTIVE_MEMORY_BROKER"].startswith("127.0.0.1:")
    assert done["claude"].hook["url"].endswith("/hook/claude")
    # The record's lane is claude-code and no claude is on PATH in a test: the postmortem
    # reports that, it does not raise.
    assert done["report"].run_id == record.run_id
    assert done["report"].status == "failed"
    assert {s.error_code for s in done["report"].specialists} == {"harness_missing"}


def test_the_minimal_run_json_is_a_valid_run_record(tmp_path: Path) -> None:
    document = json.loads(RUN_JSON.body)
    jsonschema.validate(document, shipped_schema())
    (tmp_path / "transcripts").mkdir()
    (tmp_path / "transcripts" / "ex-1.jsonl").write_text("", "utf-8")
    record = parse_run_record(document, tmp_path)
    assert [execution.ref for execution in record.executions] == ["exec:ex-1"]


def test_the_runtime_json_is_accepted_and_budget_bytes_is_refused() -> None:
    runtime = json.loads(RUNTIME_JSON.body)
    parse_runtime_config(runtime)
    runtime["activeMemory"]["budgetBytes"] = 32000
    with pytest.raises(ConfigError, match="budgetBytes"):
        parse_runtime_config(runtime)
