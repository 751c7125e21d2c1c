"""The learn worker: one at a time, each session once per content, after it settled, within the
daily cap, and every outcome recorded with its reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from active_memory.learn import session_end
from active_memory.learn.folder import LearnConfig, LearnFolder, LessonTouched, SessionState
from active_memory.learn.worker import (
    ReviewFailed,
    ReviewOutcome,
    ReviewSkipped,
    held_lock,
    run_worker,
    settle_limit_s,
)


@dataclass
class FakeReviewer:
    """Reviews by rule: ``skip`` / ``fail`` name session files to refuse; ``lessons`` what a
    done review changed. ``reviewed`` lists the files reviewed, in order."""

    skip: dict[str, ReviewSkipped] = field(default_factory=dict)
    fail: dict[str, Exception] = field(default_factory=dict)
    lessons: tuple[LessonTouched, ...] = ()
    reviewed: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)

    def prepare(self, state: SessionState) -> object:
        if state.session_file in self.skip:
            raise self.skip[state.session_file]
        return state

    def review(self, prepared: object) -> ReviewOutcome:
        assert isinstance(prepared, SessionState)
        self.reviewed.append(prepared.session_file)
        if prepared.session_file in self.fail:
            raise self.fail[prepared.session_file]
        return ReviewOutcome(f"run-{len(self.reviewed)}", self.lessons)

    def release(self, prepared: object) -> None:
        assert isinstance(prepared, SessionState)
        self.released.append(prepared.session_file)


def queue(folder: LearnFolder, path: Path, harness: str = "claude") -> str:
    name = session_end.write_entry(str(folder.path), harness, str(path), {"reason": "other"})
    return name.removesuffix(".json")


def old_session(tmp_path: Path, name: str, text: str = "a session\n") -> Path:
    path = tmp_path / name
    path.write_text(text)
    past = time.time() - 3600
    os.utime(path, (past, past))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> LearnFolder:
    made = LearnFolder(tmp_path / "learn")
    made.save_config(LearnConfig(settle_seconds=5, daily_cap=3))
    return made


def by_file(folder: LearnFolder) -> dict[str, SessionState]:
    return {Path(state.session_file).name: state for state in folder.states()}


def test_a_settled_session_is_reviewed_and_done_with_the_lessons_it_changed(
    tmp_path: Path, folder: LearnFolder
) -> None:
    touched = (LessonTouched(id="lesson-01JX0000000000000000000001", op="upsert", title="t"),)
    reviewer = FakeReviewer(lessons=touched)
    queue(folder, old_session(tmp_path, "a.jsonl"))
    done = run_worker(folder, reviewer)
    assert done is not None
    state = by_file(folder)["a.jsonl"]
    assert (state.state, state.run_id, state.lessons) == ("done", "run-1", touched)
    assert state.digest is not None
    assert state.end_reason == "other"
    assert list(folder.queue.iterdir()) == []


def test_the_same_content_is_reviewed_once_even_queued_again_or_from_a_copy(
    tmp_path: Path, folder: LearnFolder
) -> None:
    reviewer = FakeReviewer()
    first = old_session(tmp_path, "a.jsonl", "same\n")
    queue(folder, first)
    run_worker(folder, reviewer)
    queue(folder, first)
    queue(folder, old_session(tmp_path, "copy.jsonl", "same\n"))
    run_worker(folder, reviewer)
    assert reviewer.reviewed == [str(first)]
    states = by_file(folder)
    assert states["a.jsonl"].state == "skipped"
    assert states["a.jsonl"].code == "duplicate"
    assert states["copy.jsonl"].code == "duplicate"
    first.write_text("same\nand more\n")  # the session resumed: new content is new work
    os.utime(first, (time.time() - 3600, time.time() - 3600))
    queue(folder, first)
    run_worker(folder, reviewer)
    assert reviewer.reviewed == [str(first), str(first)]


def test_a_failed_review_runs_again_when_the_session_is_queued_again(
    tmp_path: Path, folder: LearnFolder
) -> None:
    path = old_session(tmp_path, "a.jsonl")
    reviewer = FakeReviewer(fail={str(path): ReviewFailed("harness_logged_out", "log in")})
    queue(folder, path)
    run_worker(folder, reviewer)
    assert by_file(folder)["a.jsonl"].state == "failed"
    reviewer.fail.clear()  # the user logged in
    queue(folder, path)
    run_worker(folder, reviewer)
    assert by_file(folder)["a.jsonl"].state == "done"
    assert reviewer.reviewed == [str(path), str(path)]
    assert folder.started_on(time.strftime("%Y-%m-%d", time.gmtime())) == 2


def test_the_daily_cap_defers_the_rest_and_the_next_days_worker_reviews_them(
    tmp_path: Path, folder: LearnFolder
) -> None:
    reviewer = FakeReviewer(fail={str(tmp_path / "s1.jsonl"): ReviewFailed("x", "boom")})
    for number in range(5):
        queue(folder, old_session(tmp_path, f"s{number}.jsonl", f"content {number}\n"))
    today = time.time()
    done = run_worker(folder, reviewer, clock=lambda: today)
    assert done is not None
    states = by_file(folder)
    # A failed postmortem counts: the cap bounds what is spent.
    assert len(reviewer.reviewed) == 3
    assert len(reviewer.released) == 3  # a deferred session is not prepared
    capped = [s for s in states.values() if s.code == "daily_cap"]
    assert len(capped) == 2
    assert len(done.handled["deferred"]) == 2
    assert [s.state for s in capped] == ["queued", "queued"]
    reason = capped[0].reason or ""
    assert "stays queued and the first worker of the next UTC day reviews it" in reason
    assert "`active-memory learn config --daily-cap N`" in reason
    run_worker(folder, reviewer, clock=lambda: today)  # the same day: still deferred
    assert len(reviewer.reviewed) == 3
    tomorrow = today + 86_400
    run_worker(folder, reviewer, clock=lambda: tomorrow)
    assert len(reviewer.reviewed) == 5
    assert sorted(s.state for s in by_file(folder).values()) == ["done"] * 4 + ["failed"]


def test_a_cap_of_0_pauses_learning_until_the_cap_is_raised(
    tmp_path: Path, folder: LearnFolder
) -> None:
    folder.save_config(LearnConfig(settle_seconds=5, daily_cap=0))
    reviewer = FakeReviewer()
    queue(folder, old_session(tmp_path, "a.jsonl"))
    for days in (0, 1):  # tomorrow too: a cap of 0 is a pause, not one day's limit
        run_worker(folder, reviewer, clock=lambda days=days: time.time() + days * 86_400)
        state = by_file(folder)["a.jsonl"]
        assert (state.state, state.code) == ("queued", "daily_cap")
        assert (state.reason or "").startswith("learning is paused (daily cap 0): it stays queued")
    assert reviewer.reviewed == []
    folder.save_config(LearnConfig(settle_seconds=5, daily_cap=1))
    run_worker(folder, reviewer)
    state = by_file(folder)["a.jsonl"]
    assert (state.state, state.code, state.reason) == ("done", None, None)


def test_a_session_still_changing_is_waited_for_then_reviewed(
    tmp_path: Path, folder: LearnFolder
) -> None:
    path = tmp_path / "fresh.jsonl"
    path.write_text("x\n")
    now = [time.time()]
    os.utime(path, (now[0], now[0]))
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    reviewer = FakeReviewer()
    queue(folder, path)
    run_worker(folder, reviewer, clock=lambda: now[0], sleep=sleep)
    assert slept == [pytest.approx(5, abs=0.5)]
    assert reviewer.reviewed == [str(path)]


def test_a_session_that_never_settles_is_skipped_not_settled(
    tmp_path: Path, folder: LearnFolder
) -> None:
    path = tmp_path / "busy.jsonl"
    path.write_text("x\n")
    now = [time.time()]

    def sleep(seconds: float) -> None:  # the session is written again while the worker waits
        now[0] += seconds
        os.utime(path, (now[0], now[0]))

    os.utime(path, (now[0], now[0]))
    queue(folder, path)
    run_worker(folder, FakeReviewer(), clock=lambda: now[0], sleep=sleep)
    state = by_file(folder)["busy.jsonl"]
    assert (state.state, state.code) == ("skipped", "not_settled")
    assert now[0] - state.queued_ms / 1000 > settle_limit_s(folder.config())


def test_no_wait_leaves_an_unsettled_session_queued(tmp_path: Path, folder: LearnFolder) -> None:
    path = tmp_path / "fresh.jsonl"
    path.write_text("x\n")
    queue(folder, path)
    run_worker(folder, FakeReviewer(), wait=False)
    assert by_file(folder)["fresh.jsonl"].state == "queued"


def test_every_skip_and_failure_is_recorded_with_its_code_and_reason(
    tmp_path: Path, folder: LearnFolder
) -> None:
    specialist = old_session(tmp_path, "specialist.jsonl", "1\n")
    logged_out = old_session(tmp_path, "logged-out.jsonl", "2\n")
    crashed = old_session(tmp_path, "crashed.jsonl", "3\n")
    gone = tmp_path / "gone.jsonl"
    reviewer = FakeReviewer(
        skip={str(specialist): ReviewSkipped("specialist_session", "a specialist's own")},
        fail={
            str(logged_out): ReviewFailed("harness_logged_out", "Claude Code is not logged in"),
            str(crashed): KeyError("surprise"),
        },
    )
    for path in (specialist, logged_out, crashed, gone):
        queue(folder, path)
    run_worker(folder, reviewer)
    states = {name: (s.state, s.code, s.reason) for name, s in by_file(folder).items()}
    assert states == {
        "specialist.jsonl": ("skipped", "specialist_session", "a specialist's own"),
        "logged-out.jsonl": ("failed", "harness_logged_out", "Claude Code is not logged in"),
        "crashed.jsonl": ("failed", "error", "KeyError: 'surprise'"),
        "gone.jsonl": ("failed", "session_missing", f"the session file {str(gone)!r} is gone"),
    }
    # The skipped one never ran (entries queued in the same millisecond have no set order).
    assert sorted(reviewer.reviewed) == sorted([str(logged_out), str(crashed)])


def test_a_running_state_left_by_a_killed_worker_is_marked_failed(
    tmp_path: Path, folder: LearnFolder
) -> None:
    key = queue(folder, old_session(tmp_path, "a.jsonl"))
    [(_, entry)] = folder.take_queue()
    assert entry is not None
    folder.put(
        SessionState(
            key=key,
            state="running",
            queued_ms=1,
            updated_ms=1,
            **entry.model_dump(exclude={"queued_ms"}),
        )
    )
    run_worker(folder, FakeReviewer())
    assert by_file(folder)["a.jsonl"].code == "worker_stopped"


def test_a_second_worker_returns_at_once_while_the_first_holds_the_lock(
    tmp_path: Path, folder: LearnFolder
) -> None:
    queue(folder, old_session(tmp_path, "a.jsonl"))
    with held_lock(folder) as held:
        assert held
        assert run_worker(folder, FakeReviewer()) is None
    assert by_file(folder) == {}  # nothing was taken while the lock was held
    assert run_worker(folder, FakeReviewer()) is not None


def test_two_worker_processes_review_a_session_once(tmp_path: Path, folder: LearnFolder) -> None:
    """Two processes start together: one takes the lock and reviews, the other returns."""
    queue(folder, old_session(tmp_path, "a.jsonl"))
    marks = tmp_path / "reviews"
    program = f"""
import sys, time
sys.path[:0] = {sys.path!r}
from active_memory.learn.folder import LearnFolder
from active_memory.learn.worker import ReviewOutcome, run_worker
class Slow:
    def prepare(self, state): return state
    def release(self, prepared): pass
    def review(self, prepared):
        with open({str(marks)!r}, "a") as out: out.write("x")
        time.sleep(1)
        return ReviewOutcome("run")
done = run_worker(LearnFolder(__import__("pathlib").Path({str(folder.path)!r})), Slow())
print("ran" if done is not None else "lock held")
"""
    workers = [
        subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    said = sorted(worker.communicate(timeout=60)[0].strip() for worker in workers)
    assert said == ["lock held", "ran"]
    assert marks.read_text() == "x"


def test_a_worker_takes_sessions_queued_while_it_runs(tmp_path: Path, folder: LearnFolder) -> None:
    later = old_session(tmp_path, "later.jsonl", "later\n")
    reviewer = FakeReviewer()
    original = reviewer.review

    def review(prepared: object) -> ReviewOutcome:
        if not reviewer.reviewed:
            queue(folder, later)  # another session ends during the first postmortem
        return original(prepared)

    reviewer.review = review  # type: ignore[method-assign]
    queue(folder, old_session(tmp_path, "first.jsonl"))
    run_worker(folder, reviewer)
    assert [Path(p).name for p in reviewer.reviewed] == ["first.jsonl", "later.jsonl"]


def test_the_config_file_is_read_as_written(folder: LearnFolder) -> None:
    folder.save_config(LearnConfig(daily_cap=0, settle_seconds=1.5, ignore_repos=("a", "b")))
    assert json.loads(folder.config_file.read_text())["ignore_repos"] == ["a", "b"]
    assert folder.config() == LearnConfig(daily_cap=0, settle_seconds=1.5, ignore_repos=("a", "b"))
    assert folder.config_file.stat().st_mode & 0o777 == 0o600


def test_threads_are_not_needed_for_the_lock(folder: LearnFolder) -> None:
    """flock is per open file: a second open in the same process is refused too."""
    with held_lock(folder) as first:
        seen: list[bool] = []
        thread = threading.Thread(target=lambda: seen.append(_try(folder)))
        thread.start()
        thread.join()
    assert first
    assert seen == [False]


def _try(folder: LearnFolder) -> bool:
    with held_lock(folder) as held:
        return held


def _bad_session(tmp_path: Path, kind: str) -> Path:
    """A queued session file that cannot be read as one: each way it can go wrong."""
    path = tmp_path / f"{kind}.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "unreadable" and os.geteuid() == 0:
        path.symlink_to("/proc/self/mem")  # a regular file whose read fails, even for root
    elif kind == "unreadable":
        path.write_text("x\n")
        path.chmod(0)
    return path  # vanished: never written


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("kind", "code", "said"),
    [
        ("fifo", "session_unreadable", "is a FIFO (named pipe), not a regular file"),
        ("directory", "session_unreadable", "is a directory, not a regular file"),
        ("unreadable", "session_unreadable", "cannot be "),
        ("vanished", "session_missing", "is gone"),
    ],
)
def test_a_session_file_that_cannot_be_read_fails_alone_and_the_queue_goes_on(
    tmp_path: Path, kind: str, code: str, said: str
) -> None:
    folder = LearnFolder(tmp_path / "learn")
    folder.save_config(LearnConfig(settle_seconds=0))
    bad = _bad_session(tmp_path, kind)
    queue(folder, bad)
    time.sleep(0.002)  # queued after the bad one: handled after it
    good = old_session(tmp_path, "good.jsonl")
    queue(folder, good)
    reviewer = FakeReviewer()
    done = run_worker(folder, reviewer)
    assert done is not None
    failed = by_file(folder)[bad.name]
    assert (failed.state, failed.code) == ("failed", code)
    assert said in (failed.reason or "")
    assert reviewer.reviewed == [str(good)]
    assert by_file(folder)["good.jsonl"].state == "done"
    # Nothing is left queued for the next worker to trip over.
    assert run_worker(folder, reviewer) is not None
    assert reviewer.reviewed == [str(good)]


def test_an_unforeseen_error_fails_that_session_and_the_next_is_reviewed(
    tmp_path: Path, folder: LearnFolder
) -> None:
    broken = old_session(tmp_path, "broken.jsonl", "1\n")
    good = old_session(tmp_path, "good.jsonl", "2\n")

    class Broken(FakeReviewer):
        def prepare(self, state: SessionState) -> object:
            if state.session_file == str(broken):
                raise RuntimeError("the converter tripped\non two lines")
            return super().prepare(state)

    reviewer = Broken()
    queue(folder, broken)
    time.sleep(0.002)
    queue(folder, good)
    run_worker(folder, reviewer)
    states = by_file(folder)
    assert (states["broken.jsonl"].state, states["broken.jsonl"].code) == ("failed", "error")
    assert states["broken.jsonl"].reason == "RuntimeError: the converter tripped"
    assert states["good.jsonl"].state == "done"
