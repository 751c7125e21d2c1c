"""The learn worker: one at a time, it reviews the queued sessions once each has settled.

Started detached by the session-end hook, by ``active-memory learn run`` or by ``serve``, it
first takes the worker lock (``fcntl.flock`` on ``worker.lock``, not waiting): a second worker
finds it held and returns at once, so two session ends never review twice. Holding it, the
worker takes every queue entry into its session's state and handles each queued session, oldest
first:

* its file must be a regular file that exists (one gone is failed ``session_missing``; a
  directory, a FIFO or a device is failed ``session_unreadable`` without being opened, and so
  is one that cannot be read) and be unchanged for ``settle_seconds`` (a session resumed and
  still written is waited for, up to :func:`settle_limit_s`; past that it is skipped
  ``not_settled`` and its next session end queues it again);
* no postmortem of its content (sha256 of the file) may have completed (``duplicate``; one
  that failed, or was cut short, runs again when the session is queued again);
* fewer than ``daily_cap`` postmortems may have started today, UTC: past the cap the session
  is deferred, it stays queued with the reason (code ``daily_cap``) and the first worker that
  runs once the cap allows (a new UTC day, or a cap raised with ``learn config``) reviews it; a
  cap of 0 pauses learning;
* the reviewer's check must pass (a specialist's own session, or an excluded repository by its
  key, is skipped with the reviewer's reason);

then its start goes into the ledger (counted even if the postmortem fails: the cap bounds the
spend, not the successes), the session is ``running``, and the reviewer's postmortem ends it
``done`` with the lessons changed (its completion goes into the ledger too), or ``failed`` with
its cause. Anything else that goes wrong with one session fails it (``error``, with the exception's
first line) and the worker goes on to the next, so one bad entry never holds up the queue. A
state left ``running`` by a worker that was killed is marked failed by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from active_memory.bounded_input import open_regular, regular_file_problem
from active_memory.errors import InputRefused
from active_memory.learn.folder import LearnConfig, LearnFolder, LessonTouched, SessionState

__all__ = [
    "ReviewFailed",
    "ReviewOutcome",
    "ReviewSkipped",
    "Reviewer",
    "WorkerRun",
    "content_digest",
    "deferral_reason",
    "held_lock",
    "run_worker",
    "settle_limit_s",
]

_CHUNK = 1024 * 1024
_MISSING = "does not exist"
# What _handle says of a session the daily cap defers (it stays queued).
_DEFERRED = "deferred"


class ReviewSkipped(Exception):
    """A session the reviewer will not review: ``code`` and a one-sentence ``reason``."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class ReviewFailed(Exception):
    """A postmortem that could not run or failed: its cause ``code`` and sentence."""

    def __init__(self, code: str, reason: str, run_id: str | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.run_id = run_id


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """A postmortem that ran: the lessons it changed, and ``failure`` (its cause code and
    sentence) when a specialist failed, beside what the others published."""

    run_id: str | None
    lessons: tuple[LessonTouched, ...] = ()
    failure: tuple[str, str] | None = None


class Reviewer(Protocol):
    """What runs the postmortem of one session: ``prepare`` reads it (ReviewSkipped for one
    that must not be reviewed, ReviewFailed for one that cannot be read), ``review`` runs it,
    and ``release`` drops what ``prepare`` made (called whether ``review`` ran or not)."""

    def prepare(self, state: SessionState) -> object: ...

    def review(self, prepared: object) -> ReviewOutcome: ...

    def release(self, prepared: object) -> None: ...


@dataclass(slots=True)
class WorkerRun:
    """What one worker did, by final state: the keys it moved there (``deferred``: the keys
    the daily cap left queued)."""

    handled: dict[str, list[str]] = field(default_factory=dict)

    def add(self, state: SessionState) -> None:
        self.handled.setdefault(state.state, []).append(state.key)

    def defer(self, state: SessionState) -> None:
        self.handled.setdefault(_DEFERRED, []).append(state.key)


def settle_limit_s(config: LearnConfig) -> float:
    """How long a queued session may keep changing before it is skipped ``not_settled``."""
    return max(60.0, 6 * config.settle_seconds)


def content_digest(path: Path) -> str:
    """The sha256 of the regular file at ``path``: InputRefused for anything else (never opened
    to wait on, as a FIFO would make it), OSError when reading fails."""
    digest = hashlib.sha256()
    with os.fdopen(open_regular(path, what=f"the session file {str(path)!r}"), "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def deferral_reason(cap: int, day: str) -> str:
    """Why a session the daily cap leaves queued waits, and what reviews it."""
    if cap == 0:
        return (
            "learning is paused (daily cap 0): it stays queued until `active-memory learn "
            "config --daily-cap N` sets a cap above 0, and the next worker reviews it"
        )
    return (
        f"the daily cap of {cap} postmortem(s) was reached on {day} (UTC): it stays queued "
        "and the first worker of the next UTC day reviews it (to review it sooner, raise the "
        "cap with `active-memory learn config --daily-cap N`, then run `active-memory learn run`)"
    )


@contextlib.contextmanager
def held_lock(folder: LearnFolder) -> Iterator[bool]:
    """Hold the worker lock while inside; yields False (holding nothing) when another has it."""
    folder.make()
    descriptor = os.open(folder.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{os.getpid()}\n".encode())
        yield True
    finally:
        os.close(descriptor)  # closing releases the lock


def run_worker(
    folder: LearnFolder,
    reviewer: Reviewer,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    wait: bool = True,
) -> WorkerRun | None:
    """Handle every queued session (None: another worker holds the lock). ``wait`` False leaves
    sessions that have not settled queued instead of waiting for them."""
    with held_lock(folder) as held:
        if not held:
            return None
        done = WorkerRun()
        config = folder.config()
        _end_stale(folder, done)
        deferred: set[str] = set()  # left queued by the cap: not looked at again by this worker
        while True:
            _take_queue(folder, clock)
            queued = [s for s in folder.states() if s.state == "queued" and s.key not in deferred]
            if not queued:
                return done
            waits = []
            for state in sorted(queued, key=lambda s: (s.queued_ms, s.key)):
                try:
                    left = _handle(folder, reviewer, state, config, clock, done)
                except Exception as error:
                    # The one session fails on anything unforeseen, not the worker: a session
                    # left queued would stop every later worker first.
                    done.add(folder.put(state, state="failed", code="error", reason=_said(error)))
                    continue
                if left == _DEFERRED:
                    deferred.add(state.key)
                elif isinstance(left, float):
                    waits.append(left)
            if not waits:
                continue
            if not wait:
                return done
            sleep(max(0.05, min(waits)))


def _end_stale(folder: LearnFolder, done: WorkerRun) -> None:
    for state in folder.states():
        if state.state == "running":
            done.add(
                folder.put(
                    state,
                    state="failed",
                    code="worker_stopped",
                    reason="the worker stopped while it ran (it was killed or "
                    "crashed); queue it again with `active-memory learn queue`",
                )
            )


def _take_queue(folder: LearnFolder, clock: Callable[[], float]) -> None:
    for key, entry in folder.take_queue():
        if entry is None:
            continue  # a half-written or foreign file: nothing to say which session it was
        folder.put(
            SessionState(
                key=key,
                state="queued",
                queued_ms=entry.queued_ms,
                updated_ms=int(clock() * 1000),
                **entry.model_dump(exclude={"queued_ms"}),
            ),
        )


def _said(error: BaseException) -> str:
    first = (str(error).splitlines() or [type(error).__name__])[0]
    return f"{type(error).__name__}: {first}"


def _unreadable(folder: LearnFolder, state: SessionState, problem: str, done: WorkerRun) -> None:
    path = state.session_file
    if problem == _MISSING:
        code, reason = "session_missing", f"the session file {path!r} is gone"
    else:
        code = "session_unreadable"
        reason = (
            f"the session file {path!r} {problem.split('; ')[0]}; queue a readable session "
            "file again with `active-memory learn queue FILE`"
        )
    done.add(folder.put(state, state="failed", code=code, reason=reason))


def _handle(
    folder: LearnFolder,
    reviewer: Reviewer,
    state: SessionState,
    config: LearnConfig,
    clock: Callable[[], float],
    done: WorkerRun,
) -> float | str | None:
    """Move one queued session on; the seconds to wait when it has not settled yet, or
    ``_DEFERRED`` when the daily cap leaves it queued."""
    path = Path(state.session_file)
    now = clock()
    # Its type before anything opens it: a FIFO would hold the worker (and its lock) forever.
    problem = regular_file_problem(path)
    try:
        changed = path.stat().st_mtime if problem is None else 0.0
    except OSError:
        problem = _MISSING  # gone since
    if problem is not None:
        _unreadable(folder, state, problem, done)
        return None
    age = now - changed
    if age < config.settle_seconds:
        if now - state.queued_ms / 1000 > settle_limit_s(config):
            done.add(
                folder.put(
                    state,
                    state="skipped",
                    code="not_settled",
                    reason=f"the session file was still changing {age:.0f} s before "
                    "the worker gave up; its next session end queues it again",
                )
            )
            return None
        return config.settle_seconds - age
    try:
        digest = content_digest(path)
    except InputRefused as refused:
        _unreadable(folder, state, refused.problem, done)
        return None
    except OSError as error:
        _unreadable(folder, state, f"cannot be read ({error.strerror or error})", done)
        return None
    if folder.reviewed(digest):
        done.add(
            folder.put(
                state,
                state="skipped",
                code="duplicate",
                digest=digest,
                reason="a postmortem already reviewed this exact content",
            )
        )
        return None
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    if folder.started_on(day) >= config.daily_cap:
        reason = deferral_reason(config.daily_cap, day)
        done.defer(folder.put(state, code="daily_cap", reason=reason, digest=digest))
        return _DEFERRED
    try:
        prepared = reviewer.prepare(state)
    except ReviewSkipped as skipped:
        done.add(
            folder.put(
                state, state="skipped", code=skipped.code, reason=skipped.reason, digest=digest
            )
        )
        return None
    except ReviewFailed as failed:
        done.add(folder.put(state, state="failed", code=failed.code, reason=failed.reason,
                            digest=digest, run_id=failed.run_id))  # fmt: skip
        return None
    try:
        folder.record_start(digest, state.key, day)
        running = folder.put(state, state="running", digest=digest, code=None, reason=None)
        done.add(_review(folder, reviewer, running, prepared))
    finally:
        reviewer.release(prepared)
    return None


def _review(
    folder: LearnFolder, reviewer: Reviewer, running: SessionState, prepared: object
) -> SessionState:
    try:
        outcome = reviewer.review(prepared)
    except ReviewFailed as failed:
        return folder.put(
            running, state="failed", code=failed.code, reason=failed.reason, run_id=failed.run_id
        )
    except Exception as error:  # the worker outlives one bad postmortem and says what it was
        return folder.put(running, state="failed", code="error", reason=_said(error))
    if outcome.failure is not None:
        code, reason = outcome.failure
        return folder.put(
            running,
            state="failed",
            code=code,
            reason=reason,
            run_id=outcome.run_id,
            lessons=outcome.lessons,
        )
    assert running.digest is not None
    folder.record_done(running.digest, running.key)
    return folder.put(running, state="done", run_id=outcome.run_id, lessons=outcome.lessons)
