"""The command helper as a harness runs it: a real subprocess fed a real payload."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.config import RuntimeConfig
from active_memory.hooks import helper
from active_memory.host import ActiveRun, open_run
from active_memory.store.backend import RunIdentity
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
HELPER = Path(helper.__file__)
CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip


@pytest.fixture
def run() -> Iterator[ActiveRun]:
    identity = RunIdentity("run-1", repository=REPOSITORY)
    with open_run(identity, RuntimeConfig(), FakeBackend(widgets_lessons()), WORKSPACE) as active:
        yield active


def run_helper(
    harness: str, payload: bytes, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-I", "-S", str(HELPER), harness, *args]
    return subprocess.run(
        command, input=payload, env={**CLEAN_ENV, **env}, capture_output=True, timeout=20
    )


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def wait_for(check: object, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    return bool(check())  # type: ignore[operator]


def test_helper_relays_the_broker_answer_and_acknowledges_it(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1", "exec-7")
    done = run_helper("claude", fixture("claude/read.json"), env)
    assert done.returncode == 0
    answer = json.loads(done.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert f"[{lesson_id(1)}@1] Config loads lazily" in context
    assert wait_for(lambda: len(run.deliveries) == 1)
    delivery = run.deliveries[0]
    assert (delivery.lesson_id, delivery.node_id, delivery.conversation_id, delivery.channel,
            delivery.execution) == (lesson_id(1), "build", "conv-1", "hook", "exec-7")  # fmt: skip
    assert [(r.tool, r.paths, r.execution) for r in run.receipts] == [
        ("Read", ("src/widgets/config.py",), "exec-7")
    ]
    again = run_helper("claude", fixture("claude/read.json"), env)
    assert json.loads(again.stdout) == {}


def test_helper_reads_the_broker_from_a_ticket(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1")
    ticket = env["ACTIVE_MEMORY_TICKET"]
    done = run_helper("codex", fixture("codex/apply_patch.json"), {}, "--ticket", ticket)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert lesson_id(1) in context
    assert lesson_id(2) in context


def test_helper_with_the_broker_down_prints_empty_and_exits_zero(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1")
    run.close()
    done = run_helper("claude", fixture("claude/read.json"), env)
    assert (done.returncode, json.loads(done.stdout), done.stderr) == (0, {}, b"")


def test_helper_gives_up_on_a_broker_that_never_answers() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        host, port = silent.getsockname()
        env = {"ACTIVE_MEMORY_BROKER": f"{host}:{port}", "ACTIVE_MEMORY_TOKEN": "t"}
        started = time.monotonic()
        done = run_helper("copilot", fixture("copilot/view.json"), env)
        elapsed = time.monotonic() - started
    assert (done.returncode, json.loads(done.stdout)) == (0, {})
    # Not a benchmark: only shows the helper did not wait for the (never) answer.
    assert elapsed < 10


@pytest.mark.parametrize(
    ("harness", "payload", "env"),
    [
        ("claude", b"{}", {}),
        ("claude", b"not json at all", {"ACTIVE_MEMORY_BROKER": "127.0.0.1:1"}),
        ("nobody", b"{}", {}),
        ("claude", b"x" * (300 * 1024), {}),
        ("claude", b"{}", {"ACTIVE_MEMORY_TICKET": "/nonexistent/ticket"}),
        ("claude", b"{}", {"ACTIVE_MEMORY_BROKER": "not-an-address", "ACTIVE_MEMORY_TOKEN": "t"}),
    ],
)
def test_helper_always_prints_a_valid_empty_answer(
    harness: str, payload: bytes, env: dict[str, str]
) -> None:
    done = run_helper(harness, payload, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")


def test_helper_with_a_wrong_token_prints_empty(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1") | {"ACTIVE_MEMORY_TOKEN": "forged"}
    done = run_helper("claude", fixture("claude/read.json"), env)
    assert json.loads(done.stdout) == {}
    assert run.deliveries == ()


def imported_modules(*args: str) -> set[str]:
    command = [sys.executable, "-X", "importtime", "-I", "-S", *args]
    done = subprocess.run(command, input=b"{}", capture_output=True, timeout=20, env=CLEAN_ENV)
    return {
        line.split("|")[-1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_helper_imports_nothing_beyond_the_bare_interpreter_but_builtins() -> None:
    bare = imported_modules("-c", "pass")
    extra = imported_modules(str(HELPER), "claude") - bare
    assert extra == {"__future__", "_socket"}


def test_console_script_entry_point_behaves_the_same(run: ActiveRun) -> None:
    script = Path(sys.executable).with_name("active-memory-hook")
    env = run.hook_env("build", "conv-9")
    done = subprocess.run([str(script), "pi"], input=fixture("pi/read.json"),
                          env={**CLEAN_ENV, **env}, capture_output=True, timeout=20)  # fmt: skip
    assert done.returncode == 0
    assert lesson_id(2) in json.loads(done.stdout)["additionalContext"]


def test_main_in_process_prints_empty_without_a_broker(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [key for key in os.environ if key.startswith("ACTIVE_MEMORY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr("sys.stdin", open(os.devnull))  # noqa: SIM115
    assert helper.main(["claude"]) == 0
    assert capsysbinary.readouterr().out == b"{}\n"
