"""The hold bound's alarms (``store/postgres/alarms.py``): one thread for the process, calls
run when due, in order, a cancelled one never."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
import weakref

import pytest

from active_memory.store.postgres import alarms
from active_memory.store.postgres.alarms import call_later


def test_a_due_call_runs_and_a_cancelled_one_never_does() -> None:
    ran: list[str] = []
    done = threading.Event()
    call_later(0.05, lambda: ran.append("kept"))
    call_later(0.02, lambda: ran.append("cancelled")).cancel()
    call_later(0.08, done.set)
    assert done.wait(5)
    assert ran == ["kept"]


def test_calls_run_in_the_order_they_come_due_whatever_the_order_they_were_set() -> None:
    ran: list[int] = []
    done = threading.Event()
    call_later(0.15, done.set)
    call_later(0.10, lambda: ran.append(3))
    call_later(0.02, lambda: ran.append(1))  # set last, due first: the thread wakes for it
    call_later(0.05, lambda: ran.append(2))
    assert done.wait(5)
    assert ran == [1, 2, 3]


@pytest.mark.parametrize("failure", [RuntimeError("a call's own failure"), SystemExit(3)])
def test_a_failing_call_does_not_stop_the_calls_after_it(failure: BaseException) -> None:
    done = threading.Event()

    def fails() -> None:
        raise failure

    call_later(0.01, fails)
    call_later(0.03, done.set)
    assert done.wait(5)


def test_many_alarms_set_and_cancelled_start_no_thread_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    call_later(60, lambda: None).cancel()  # the alarm thread, started once
    started: list[threading.Thread] = []
    real = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        started.append(thread)
        real(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    for _ in range(2000):
        call_later(60, lambda: None).cancel()
    assert started == []


def test_cancel_returns_once_a_call_already_running_has_ended() -> None:
    # The hold bound's call cancels the statement on its session's connection: were it still
    # to run after the write's cancel, the connection could be back in the pool, carrying
    # another request's statement (another tenant's), and that one would be cancelled.
    started, ran = threading.Event(), []

    def slow() -> None:
        started.set()
        time.sleep(0.2)
        ran.append("ended")

    alarm = call_later(0, slow)
    assert started.wait(5)
    alarm.cancel()
    assert ran == ["ended"]


def test_a_cancelled_alarm_lets_go_of_its_call_and_leaves_the_heap() -> None:
    class Call:
        def __call__(self) -> None:
            pass

    calls = [Call() for _ in range(5000)]
    held = [weakref.ref(call) for call in calls]
    for call in calls:
        call_later(600, call).cancel()  # due long after the test: only a cancel frees them
    del calls, call
    gc.collect()
    assert not any(ref() is not None for ref in held)
    assert len(alarms._CLOCK._due) < 1000  # swept, not kept until each comes due


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_child_forked_while_the_alarms_lock_was_held_can_set_alarms() -> None:
    call_later(600, lambda: None).cancel()  # the parent's alarm thread, started
    with alarms._CLOCK._changed:  # as the alarm thread holds it, a moment on each wake
        pid = os.fork()
        if pid == 0:  # the child: its alarm must run, not wait forever for that lock
            try:
                signal.signal(signal.SIGALRM, signal.SIG_DFL)  # killed if it waits on
                signal.alarm(5)
                done = threading.Event()
                call_later(0.01, done.set)
                os._exit(0 if done.wait(3) else 1)
            finally:
                os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
