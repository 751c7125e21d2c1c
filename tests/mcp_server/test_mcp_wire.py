"""The stdio wire itself: lines that are not messages, or too long to be one, are dropped and
the server keeps answering."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from active_memory.mcp_server.stdin_lines import MAX_MESSAGE_BYTES
from mcp_server.kit import CALL_TIMEOUT_S, SRC, Served, serve_fixture
from recall.kit import lesson_id


def _interrupt_as_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    served: Served = serve_fixture(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "active_memory.cli.main", "mcp", "--store", str(served.store)],
        cwd=served.workspace,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # As from a terminal: a suite started in the background (`pytest &`, nohup) ignores
        # SIGINT, and an ignored signal stays ignored in every child it starts.
        preexec_fn=_interrupt_as_default,
    )
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=CALL_TIMEOUT_S)


def send(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.flush()


def request(process: subprocess.Popen[bytes], number: int, method: str, params: Any) -> None:
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
    send(process, json.dumps(message).encode() + b"\n")


def answer(process: subprocess.Popen[bytes], number: int) -> dict[str, Any]:
    """The response to request ``number``, within the call timeout."""
    stdout: IO[bytes] | None = process.stdout
    assert stdout is not None
    deadline = time.monotonic() + CALL_TIMEOUT_S
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=deadline - time.monotonic()):
                break
            line = stdout.readline()
            assert line, "the server closed its output"
            message = json.loads(line)
            if message.get("id") == number:
                return message  # type: ignore[no-any-return]
    pytest.fail(f"no answer to request {number} within {CALL_TIMEOUT_S} s")


def test_garbage_and_an_over_long_line_are_dropped_and_the_server_answers(
    server: subprocess.Popen[bytes],
) -> None:
    send(server, b"this is not JSON\n")
    send(server, b"{" + b"x" * (2 * MAX_MESSAGE_BYTES) + b"\n")
    send(server, b'{"jsonrpc": "2.0", "id": 9, "method": 1}\n')
    request(server, 1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "raw", "version": "0"}})  # fmt: skip
    assert answer(server, 1)["result"]["serverInfo"]["name"] == "active-memory"
    send(server, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    recall = {"kind": "file", "value": "src/widgets/config.py"}
    request(server, 2, "tools/call", {"name": "recall", "arguments": recall})
    result = answer(server, 2)["result"]
    assert result["isError"] is False
    assert f"[{lesson_id(1)}@1] Config loads lazily" in result["content"][0]["text"]
    request(server, 3, "tools/call", {"name": "recall", "arguments": "not an object"})
    refused = answer(server, 3)
    assert "error" in refused or refused["result"]["isError"] is True
    request(server, 4, "tools/call", {"name": "list", "arguments": {}})
    assert answer(server, 4)["result"]["structuredContent"]["total"] == 6


# An idle server exits in about 0.3 s (benchmarks/mcp_bench.py; the SDK's client waits 2 s before
# it terminates one). A hang never ends, so a bound well above that still catches it, and a loaded
# machine (a CI run beside the tests) does not fail it.
EXIT_WITHIN_S = 10.0


def initialized(process: subprocess.Popen[bytes]) -> None:
    request(process, 1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "raw", "version": "0"}})  # fmt: skip
    assert "result" in answer(process, 1)
    send(process, b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')


def exit_code(process: subprocess.Popen[bytes]) -> int | None:
    """The exit code within EXIT_WITHIN_S of now, None when the server is still running."""
    try:
        return process.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        return None


def _signal_state(process: subprocess.Popen[bytes]) -> str:
    """The process's signal masks (blocked, ignored, caught), to tell why a signal did nothing."""
    status = Path(f"/proc/{process.pid}/status")
    lines = status.read_text().splitlines() if status.exists() else []
    return "; ".join(line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt")))


def stderr_of(process: subprocess.Popen[bytes]) -> str:
    assert process.stderr is not None
    return process.stderr.read().decode("utf-8", "replace")


@pytest.mark.parametrize("partial", [b"", b'{"jsonrpc": "2.0", "id": 5, "meth'])
def test_the_server_exits_promptly_when_its_input_closes(
    server: subprocess.Popen[bytes], partial: bytes
) -> None:
    initialized(server)
    send(server, partial)
    assert server.stdin is not None
    server.stdin.close()
    assert exit_code(server) == 0
    assert "Traceback" not in stderr_of(server)


def test_an_interrupt_while_the_client_is_quiet_ends_the_server(
    server: subprocess.Popen[bytes],
) -> None:
    initialized(server)
    server.send_signal(signal.SIGINT)  # the input stays open: only the signal can end it
    assert exit_code(server) is not None, _signal_state(server)
    assert "Traceback" not in stderr_of(server)
