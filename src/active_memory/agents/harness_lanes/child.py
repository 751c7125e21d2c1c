"""One harness CLI run as a child process: fed on stdin, read bounded, ended with its group.

A harness starts helpers of its own (a Node.js runtime, ripgrep for searches, MCP servers it
was told about), so the child is started in a new session (``start_new_session=True``): its
process group is everything it started. The shared deadline, the session's cancellation
(asyncio cancellation of the awaiting task) and output beyond the bound all end that whole
group, TERM first and KILL after a grace period; a child that exits by itself still has its
group killed, so a helper it left behind never outlives the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.errors import ProviderDeadlineExceeded, ProviderError

__all__ = ["Finished", "end_group", "run_child"]

# What a TERM'd group gets to exit before it is killed.
TERM_GRACE_SECONDS = 2.0
# How long the pipes may stay open after the harness itself exited, before its group is killed.
DRAIN_SECONDS = 1.0
_CHUNK = 64 * 1024
_POLL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Finished:
    """A child that exited: its exit code, its whole stdout and the tail of its stderr."""

    returncode: int
    stdout: bytes
    stderr: bytes


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the group; False once no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A pid reused by a process that is not ours: the group we started is gone.
        return False
    return True


async def end_group(process: asyncio.subprocess.Process, grace: float = TERM_GRACE_SECONDS) -> None:
    """End the child's whole process group: TERM, wait up to ``grace`` for the leader, KILL.

    The leader's exit is polled, not awaited with ``Process.wait()``: until Python 3.12 that
    returns only once every pipe is closed, and a pipe whose reader stopped (output beyond its
    bound) is never seen closing, so the wait would never return."""
    pgid = process.pid
    if process.returncode is None and _signal_group(pgid, signal.SIGTERM):
        await _exited(process, time.monotonic() + grace)
    _signal_group(pgid, signal.SIGKILL)
    await _exited(process, None)


async def _exited(process: asyncio.subprocess.Process, until: float | None) -> None:
    """Until the leader has exited (its code is known), or ``until`` (monotonic) has passed."""
    while process.returncode is None and (until is None or time.monotonic() < until):
        await asyncio.sleep(_POLL_SECONDS)


async def _read_bounded(stream: asyncio.StreamReader, limit: int, *, keep_tail: bool) -> bytes:
    """Everything on ``stream``; beyond ``limit`` bytes, an error (or, with ``keep_tail``, only
    the last ``limit`` bytes are kept: stderr is for the one sentence that explains a failure)."""
    data = bytearray()
    while chunk := await stream.read(_CHUNK):
        data += chunk
        if len(data) > limit:
            if not keep_tail:
                raise ProviderError(
                    f"the harness wrote more than {limit} bytes of output; the session was ended",
                    cause="harness_output_too_large",
                )
            del data[: len(data) - limit]
    return bytes(data)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    stdin.close()


async def run_child(
    argv: Sequence[str],
    *,
    stdin: bytes,
    cwd: Path,
    env: Mapping[str, str],
    deadline: float | None,
    max_output: int,
    what: str,
) -> Finished:
    """Run ``argv`` to its exit, or end its group at ``deadline`` (on :func:`time.monotonic`;
    :class:`ProviderDeadlineExceeded` naming ``what``) or on cancellation (re-raised)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as error:
        # Gone since it was checked, or a command line beyond the system's limit (E2BIG).
        raise ProviderError(
            f"{what}: `{argv[0]}` could not be started: {error}", cause="harness_failed"
        ) from error
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
    reading = asyncio.gather(
        _feed(process.stdin, stdin),
        _read_bounded(process.stdout, max_output, keep_tail=False),
        _read_bounded(process.stderr, 64 * 1024, keep_tail=True),
    )
    try:
        async with asyncio.timeout(remaining):
            returncode = await _leader_exit(process, reading)
            # A helper the harness left running may hold its pipes open: it goes now.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reading), DRAIN_SECONDS)
            _signal_group(process.pid, signal.SIGKILL)
            _, stdout, stderr = await reading
            await process.wait()
    except TimeoutError:
        await _stop(reading, process)
        raise ProviderDeadlineExceeded(
            f"{what}: the deadline passed; its processes were ended"
        ) from None
    except BaseException:
        await _stop(reading, process)
        raise
    finally:
        _close_transport(process)
    return Finished(returncode, stdout, stderr)


def _close_transport(process: asyncio.subprocess.Process) -> None:
    """Close the process's transport while its loop runs. Python 3.11 leaves that to the
    transport's finaliser, which, run after ``asyncio.run`` has closed the loop, raises
    "Event loop is closed" from ``__del__``; asyncio offers no public way to do it."""
    transport = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


async def _leader_exit(process: asyncio.subprocess.Process, reading: asyncio.Future[Any]) -> int:
    """The leader's exit code; a reader that fails first (output beyond its bound) raises.

    Polled: until Python 3.12, ``Process.wait()`` returns only once every pipe is closed, and
    a helper the harness left running would hold them open."""
    while process.returncode is None:
        if reading.done():
            reading.result()
            return await process.wait()
        await asyncio.wait({reading}, timeout=_POLL_SECONDS)
    return process.returncode


async def _stop(work: asyncio.Future[Any], process: asyncio.subprocess.Process) -> None:
    """End the group and the readers, even while this task is being cancelled."""
    work.cancel()
    with contextlib.suppress(BaseException):
        await work
    await asyncio.shield(end_group(process))
