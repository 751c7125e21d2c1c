"""``active-memory serve`` tickets name one start: a new token each time, gone on exit."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from active_memory.hooks import helper
from active_memory.hooks.ticket import read_ticket
from recall.kit import payload_in, seed_store, widgets_checkout, widgets_lessons

CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip
HELPER = Path(helper.__file__)


def start(workspace: Path, store: Path) -> tuple[subprocess.Popen[bytes], dict[str, object]]:
    script = Path(sys.executable).with_name("active-memory")
    process = subprocess.Popen(
        [str(script), "serve", "--repository", str(workspace), "--store", str(store), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=CLEAN_ENV,
    )  # fmt: skip
    assert process.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "}":
        line = process.stdout.readline().decode()
        assert line, process.stderr.read() if process.stderr else ""
        lines.append(line.rstrip("\n"))
    return process, json.loads("\n".join(lines))


def ask(ticket: str, payload: bytes) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-I", "-S", str(HELPER), "codex", "--ticket", ticket]
    return subprocess.run(command, input=payload, capture_output=True, timeout=20,
                          env=CLEAN_ENV)  # fmt: skip


def ask_until_answered(ticket: str, payload: bytes) -> dict[str, object]:
    """The answer to ``payload``, asked again while it is empty: on a loaded machine a fresh
    serve's first recall can outlast the helper's 250 ms, which then fails open with ``{}``
    (and the serve, whose answer was not taken, delivers nothing)."""
    for _ in range(5):
        answered: dict[str, object] = json.loads(ask(ticket, payload).stdout)
        if answered:
            return answered
    return answered


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_each_serve_start_has_a_new_token_and_its_ticket_goes_with_it(
    tmp_path: Path, stop: signal.Signals
) -> None:
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    seed_store(store, widgets_lessons())
    payload = payload_in("codex/apply_patch.json", workspace)
    other = payload.replace(b"0199a8f2-5c1d", b"0299a8f2-5c1d")  # another conversation
    tokens = []
    for number in range(2):
        process, state = start(workspace, store)
        ticket = str(state["ticket"])
        try:
            tokens.append(read_ticket(ticket)[1])
            if number == 0:
                answered = ask_until_answered(ticket, payload)
                assert "additionalContext" in answered["hookSpecificOutput"]
            else:  # the restarted serve remembers what the conversation received
                assert json.loads(ask(ticket, payload).stdout) == {}
                answered = ask_until_answered(ticket, other)
                assert "additionalContext" in answered["hookSpecificOutput"]
        finally:
            process.send_signal(stop)
            code = process.wait(timeout=20)
        assert code == 0
        assert not Path(ticket).exists()
        done = ask(ticket, payload)
        assert (done.returncode, done.stdout) == (0, b"{}\n")
    assert tokens[0] != tokens[1]
