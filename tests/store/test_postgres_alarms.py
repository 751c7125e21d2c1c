"""The hold bound's alarms (``store/postgres/alarms.py``): one thread for the process, calls
run when due, in order, a cancelled one never."""

from __future__ import annotations

import threading

import pytest

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


def test_a_failing_call_does_not_stop_the_calls_after_it() -> None:
    done = threading.Event()

    def fails() -> None:
        raise RuntimeError("a call's own failure")

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
