"""``specialist run`` and ``postmortem`` against a small model's ways, on a loopback stand-in:
calls written as text, a lane aimed at the wrong server, a server that never answers, a server
that answers as another model."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.runlog import read_events
from agents.loopback_model import serving
from cli_runner import run_cli
from postmortem.postmortem_kit import first_run

pytestmark = pytest.mark.timeout(60)

SRC = Path(__file__).resolve().parents[2] / "src"


def _specialist_run(folder: Path, base_url: str, store: Path, *more: str) -> Result:
    return run_cli(["specialist", "run", "graph_discovery", folder, "--base-url", base_url,
                    "--model", "stand-in", "--store", store, *more])  # fmt: skip


def test_specialist_run_investigates_through_calls_written_as_text(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    with serving(text_calls=True) as stand_in:
        result = _specialist_run(folder, f"{stand_in.url}/v1", tmp_path / "s.sqlite3",
                                 "--lane", "compatible")  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    # Both the listing and the answer came as fenced JSON text, and were taken as calls.
    assert "session      2 turn(s), 1 tool call(s) (2 call(s) written as text), tokens " in (
        result.stdout
    )
    assert "validation   accepted: 0 item(s) accepted, 0 rejected" in result.stdout


def test_no_text_calls_leaves_the_same_model_unheard(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    with serving(text_calls=True) as stand_in:
        result = _specialist_run(folder, f"{stand_in.url}/v1", tmp_path / "s.sqlite3",
                                 "--lane", "compatible", "--no-text-calls")  # fmt: skip
    assert result.exit_code == 1
    assert "session      2 turn(s), 0 tool call(s), tokens " in result.stdout
    assert "failed       failed (contract_violation)" in result.stdout


def test_the_openai_lane_at_a_local_server_warns_once_on_stderr_of_a_real_process(
    tmp_path: Path,
) -> None:
    folder, _ = first_run(tmp_path)
    with serving() as stand_in:
        done = subprocess.run(
            [sys.executable, "-m", "active_memory.cli.main", "specialist", "run",
             "graph_discovery", str(folder), "--lane", "openai", "--base-url",
             f"{stand_in.url}/v1", "--model", "stand-in", "--store",
             str(tmp_path / "s.sqlite3")],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )  # fmt: skip
    host = stand_in.url.removeprefix("http://")
    assert done.stderr == (
        f"warning: the openai lane is for api.openai.com, but its base URL points at {host}; "
        "for another server use the compatible lane (--lane compatible)\n"
    )
    assert f"model        openai stand-in at {host}, answer as native" in done.stdout


@contextmanager
def _silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers: a hung server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"127.0.0.1:{listener.getsockname()[1]}"


def test_a_server_that_never_answers_is_named_with_the_time_waited(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    runtime = tmp_path / "runtime.json"
    runtime.write_text(json.dumps({"globalAgents": {"postmortem": {"timeoutMs": 1500}}}))
    with _silent_server() as host:
        result = _specialist_run(folder, f"http://{host}/v1", tmp_path / "s.sqlite3",
                                 "--lane", "compatible", "--runtime", str(runtime))  # fmt: skip
    assert result.exit_code == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith("failed"))
    assert line.startswith("failed       timed_out (timed_out): the provider did not answer ")
    assert f"openai/compatible at {host} did not answer within 1." in line


def test_the_postmortem_report_shows_the_model_the_server_answered_as(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder, _ = first_run(tmp_path)
    log = tmp_path / "run-log.jsonl"
    with serving(answered_as="qwen2.5-coder-1.5b") as stand_in, caplog.at_level(logging.WARNING):
        result = run_cli(["postmortem", folder, "--lane", "compatible", "--base-url",
                          f"{stand_in.url}/v1", "--model", "qwen2.5-coder-7b", "--store",
                          tmp_path / "s.sqlite3", "--run-log", log])  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    host = stand_in.url.removeprefix("http://")
    assert (
        f"source node  implement (openai/compatible qwen2.5-coder-7b at {host}, the server "
        "answered as qwen2.5-coder-1.5b)"
    ) in result.stdout
    summary = next(e for e in read_events(log) if e["event"] == "postmortem")
    assert (summary["model"], summary["answered_model"]) == (
        "qwen2.5-coder-7b",
        "qwen2.5-coder-1.5b",
    )
    warned = [r.getMessage() for r in caplog.records if "answered as" in r.getMessage()]
    assert len(warned) == 1  # once, though several specialists heard it
