"""A harness session that runs past the deadline, or is cancelled, ends with its whole process
group: the harness and what it started (here a grandchild) are gone, none left behind."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from active_memory.agents.harness_lanes.child import run_child
from active_memory.agents.harness_lanes.claude_code import ClaudeCodeLane
from active_memory.agents.harness_lanes.codex import CodexLane
from active_memory.agents.harness_lanes.copilot import CopilotLane
from active_memory.agents.harness_lanes.pi import PiLane
from active_memory.agents.providers.base import AnswerContract, ModelRequest, UserMessage
from active_memory.agents.tool_loop import Session
from active_memory.cancel import CancelToken
from active_memory.errors import ProviderDeadlineExceeded, ProviderError, SessionCancelled
from active_memory.models.runs import Binding
from fake_claude import install_fake_claude
from fake_codex import install_fake_codex
from fake_copilot import install_fake_copilot
from fake_harness import FakeHarness, hang
from fake_pi import install_fake_pi

pytestmark = pytest.mark.timeout(60)

BINDING = Binding(provider="anthropic", model="claude-sonnet-4-5", lane="claude-code")
# Each harness lane: its fake CLI and its provider, as the deadline tests start them.
LANES = {
    "claude-code": (install_fake_claude, ClaudeCodeLane),
    "codex": (install_fake_codex, CodexLane),
    "copilot": (install_fake_copilot, CopilotLane),
    "pi": (install_fake_pi, PiLane),
}
CONTRACT = AnswerContract(name="answer", schema={"type": "object"})


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"  # exited, waiting for its parent to reap it


def _wait_gone(*pids: int, within: float = 5.0) -> list[int]:
    until = time.monotonic() + within
    while time.monotonic() < until:
        left = [pid for pid in pids if not _gone(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if not _gone(pid)]


def _started(fake: FakeHarness, within: float = 20.0) -> tuple[int, int]:
    until = time.monotonic() + within
    while not (fake.folder / "pids").exists():
        assert time.monotonic() < until, "the fake claude never started its grandchild"
        time.sleep(0.05)
    time.sleep(0.05)
    return fake.pids()


def _request(tmp_path: Path, deadline: float | None) -> ModelRequest:
    return ModelRequest(
        model=BINDING.model,
        system="sys",
        messages=(UserMessage("go"),),
        contract=CONTRACT,
        deadline=deadline,
        folders=(("evidence", str(tmp_path)),),
    )


def _written_pids(fake: FakeHarness) -> tuple[int, int] | None:
    """The fake's and its grandchild's pids, once it has written both."""
    try:
        return fake.pids()
    except (FileNotFoundError, ValueError):  # not started yet, or ended mid-write
        return None


# The deadlines a hung fake is given in turn: the first is a few times what a fake (a Python
# script) takes to start its grandchild on a loaded machine; a run ended before it had started
# one ends no grandchild, so it proves less and runs again with the longer deadline.
DEADLINES_S = (1.0, 3.0)


@pytest.mark.parametrize("lane_name", sorted(LANES))
def test_the_deadline_ends_the_harness_and_everything_it_started(
    tmp_path: Path, lane_name: str
) -> None:
    install, provider = LANES[lane_name]
    for seconds in DEADLINES_S:
        fake = install(tmp_path / f"bin-{seconds}", [hang()])
        lane = provider(BINDING.model_copy(update={"lane": lane_name}), env={"PATH": fake.path})
        started = time.monotonic()
        with pytest.raises(ProviderDeadlineExceeded, match="the deadline passed"):
            asyncio.run(lane.complete(_request(tmp_path, time.monotonic() + seconds)))
        assert time.monotonic() - started < seconds + 7
        pids = _written_pids(fake)
        if pids is not None:
            assert _wait_gone(*pids) == []
            return
    pytest.fail(f"the fake {lane_name} never started its grandchild within {seconds} s")


def test_a_cancelled_session_ends_the_harness_and_everything_it_started(tmp_path: Path) -> None:
    fake = install_fake_claude(tmp_path / "bin", [hang()])
    lane = ClaudeCodeLane(BINDING, env={"PATH": fake.path})
    cancel = CancelToken()
    session = Session(lane, BINDING, system="sys", prompt="go", contract=CONTRACT,
                      deadline=time.monotonic() + 60, cancel=cancel,
                      folders=(("evidence", str(tmp_path)),))  # fmt: skip

    async def run_and_cancel() -> None:
        task = asyncio.ensure_future(session.run())
        await asyncio.to_thread(_started, fake)
        cancel.cancel()
        with pytest.raises(SessionCancelled):
            await task

    asyncio.run(run_and_cancel())
    assert _wait_gone(*fake.pids()) == []


def test_output_beyond_the_bound_ends_the_child(tmp_path: Path) -> None:
    async def run() -> None:
        await run_child(
            ["python3", "-c", "import sys; sys.stdout.write('x' * 300000)"],
            stdin=b"",
            cwd=tmp_path,
            env=dict(os.environ),
            deadline=time.monotonic() + 30,
            max_output=100_000,
            what="a chatty child",
        )

    with pytest.raises(ProviderError) as caught:
        asyncio.run(run())
    assert caught.value.cause == "harness_output_too_large"


def test_a_child_that_exits_leaves_no_helper_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "helper.pid"
    script = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); print('done')"
    )

    async def run() -> bytes:
        finished = await run_child(
            ["python3", "-c", script],
            stdin=b"",
            cwd=tmp_path,
            env=dict(os.environ),
            deadline=time.monotonic() + 30,
            max_output=100_000,
            what="a child with a helper",
        )
        return finished.stdout

    # The helper keeps the stdout pipe open, so the run ends at the leader's exit and its group.
    assert asyncio.run(asyncio.wait_for(run(), 20)).startswith(b"done")
    assert _wait_gone(int(pid_file.read_text())) == []


def test_a_command_that_cannot_start_is_a_provider_error(tmp_path: Path) -> None:
    async def run() -> None:
        await run_child(
            [str(tmp_path / "gone")],
            stdin=b"",
            cwd=tmp_path,
            env={},
            deadline=None,
            max_output=1000,
            what="a vanished harness",
        )

    with pytest.raises(ProviderError, match="could not be started") as caught:
        asyncio.run(run())
    assert caught.value.cause == "harness_failed"
