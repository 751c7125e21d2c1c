"""The service's worker threads (``server/workers.py``): blocking calls off the event loop,
their outcome back on it, at most ``most`` threads, idle ones reused."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import threading
import time
import weakref

import pytest

from active_memory.server.workers import WorkerThreads

_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


def test_a_call_runs_on_a_worker_thread_and_its_result_comes_back() -> None:
    workers = WorkerThreads(name="test-worker")

    def where(a: int, b: int) -> tuple[str, int]:
        return threading.current_thread().name, a + b

    async def main() -> tuple[str, int]:
        return await workers.run(where, 2, 3)

    assert asyncio.run(main()) == ("test-worker", 5)
    workers.stop()


def test_an_exception_of_the_call_is_raised_in_the_awaiting_task() -> None:
    workers = WorkerThreads()

    def fails() -> None:
        raise KeyError("gone")

    async def main() -> None:
        await workers.run(fails)

    with pytest.raises(KeyError, match="gone"):
        asyncio.run(main())
    workers.stop()


def test_a_stop_iteration_of_the_call_reaches_the_task_as_a_runtime_error() -> None:
    """A future refuses StopIteration: delivered as it is, the awaiting task would never end."""
    workers = WorkerThreads()

    async def main() -> None:
        await asyncio.wait_for(workers.run(next, iter(())), timeout=5)

    with pytest.raises(RuntimeError, match="StopIteration"):
        asyncio.run(main())
    workers.stop()


def test_the_call_sees_the_context_of_its_caller() -> None:
    workers = WorkerThreads()

    async def main() -> str:
        _seen.set("the caller's")
        return await workers.run(_seen.get)

    assert asyncio.run(main()) == "the caller's"
    workers.stop()


def test_idle_threads_are_reused_and_never_more_than_most_run() -> None:
    workers = WorkerThreads(most=2)
    running = 0
    peak = 0
    names: set[int] = set()
    guard = threading.Lock()

    def busy() -> None:
        nonlocal running, peak
        with guard:
            running += 1
            peak = max(peak, running)
            names.add(threading.get_ident())
        time.sleep(0.05)
        with guard:
            running -= 1

    async def main() -> None:
        await asyncio.gather(*(workers.run(busy) for _ in range(6)))
        for _ in range(4):  # one at a time: the idle threads take them
            await workers.run(busy)

    asyncio.run(main())
    assert peak == 2
    assert len(names) == 2
    workers.stop()


def test_a_cancelled_wait_drops_the_outcome_and_the_threads_go_on() -> None:
    workers = WorkerThreads(most=1)
    release = threading.Event()

    async def main() -> str:
        waiting = asyncio.ensure_future(workers.run(release.wait))
        await asyncio.sleep(0.05)
        waiting.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        return await workers.run(lambda: "next")

    assert asyncio.run(main()) == "next"
    workers.stop()


def test_a_call_after_stop_is_refused_rather_than_left_waiting() -> None:
    workers = WorkerThreads()

    async def main() -> None:
        await workers.run(lambda: None)
        workers.stop()
        await asyncio.wait_for(workers.run(lambda: None), timeout=5)

    with pytest.raises(RuntimeError, match="stopped"):
        asyncio.run(main())


def test_stop_ends_every_thread() -> None:
    workers = WorkerThreads(name="stopping-worker")

    async def main() -> None:
        await asyncio.gather(*(workers.run(time.sleep, 0.02) for _ in range(3)))

    asyncio.run(main())
    workers.stop()
    deadline = time.monotonic() + 5
    while any(t.name == "stopping-worker" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "a worker thread outlived stop()"
        time.sleep(0.01)


def test_a_call_that_passed_the_stop_check_is_run_before_stop_ends_the_threads() -> None:
    """``stop()`` may come between a call's check that the threads still run and its job's
    put: the job must still come before the threads' ends in the queue, or its task waits
    for ever (the service closed while a request was arriving)."""
    workers = WorkerThreads(most=1)

    class StopMeanwhile:
        def __init__(self, jobs: object) -> None:
            self.jobs = jobs

        def get(self) -> object:
            return self.jobs.get()  # type: ignore[attr-defined]

        def put(self, item: object) -> None:
            if item is not None:  # a job: stop() as it is about to be put
                stopping = threading.Thread(target=workers.stop)
                stopping.start()
                stopping.join(timeout=0.2)  # it may have to wait for the put
            self.jobs.put(item)  # type: ignore[attr-defined]

    async def main() -> str:
        await workers.run(lambda: None)  # one idle thread
        workers._jobs = StopMeanwhile(workers._jobs)  # type: ignore[assignment]
        return await asyncio.wait_for(workers.run(lambda: "ran"), timeout=5)

    assert asyncio.run(main()) == "ran"


def test_an_idle_thread_keeps_nothing_of_its_last_call_context_included() -> None:
    workers = WorkerThreads(most=1)

    class Held:
        pass

    box = [Held()]
    gone = weakref.ref(box[0])
    carried: contextvars.ContextVar[object] = contextvars.ContextVar("carried")

    async def main() -> None:
        carried.set(box.pop())  # a request's value, in the context the call runs in
        await workers.run(lambda: None)

    asyncio.run(main())
    deadline = time.monotonic() + 5
    while gone() is not None:
        assert time.monotonic() < deadline, "an idle thread kept its last call's context"
        gc.collect()
        time.sleep(0.01)
    workers.stop()


def test_a_call_no_thread_could_start_for_fails_and_never_runs_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The system refuses a new thread: with none running, the call fails at once and is not
    run by a thread started later (its caller was told it failed); with one running, the call
    waits for it."""
    workers = WorkerThreads(most=2)
    ran: list[str] = []
    real_start = threading.Thread.start

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    async def call(label: str) -> None:
        await workers.run(ran.append, label)

    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        asyncio.run(call("refused"))
    monkeypatch.setattr(threading.Thread, "start", real_start)
    asyncio.run(call("later"))
    assert ran == ["later"]

    release = threading.Event()

    async def both() -> None:
        busy = asyncio.ensure_future(workers.run(release.wait, 5))
        await asyncio.sleep(0.05)  # the one thread now runs the busy call
        monkeypatch.setattr(threading.Thread, "start", refused)
        waiting = asyncio.ensure_future(call("queued"))
        await asyncio.sleep(0.05)
        monkeypatch.setattr(threading.Thread, "start", real_start)
        release.set()
        await asyncio.gather(busy, waiting)

    asyncio.run(both())
    assert ran == ["later", "queued"]
    workers.stop()
