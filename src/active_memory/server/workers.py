"""The memory service's worker threads: its blocking calls (the credential check, the store)
run here, off the event loop.

Starlette's ``run_in_threadpool`` goes through anyio: a capacity limiter, a cancel scope, a
queue guarded by a condition, a check on every call for idle threads to retire. Each checked
batch makes four such hops (a snapshot and a publication, each its credential check and its
store call), and under the team benchmark's race their bookkeeping was about a tenth of the
service's CPU, spent on the one process whose CPU bounds the race. Here a hop is one put on
the C implementation of a queue (:class:`queue.SimpleQueue`), which a waiting thread takes
without the event loop's thread holding any Python lock meanwhile, and one
``call_soon_threadsafe`` back with the outcome.

The threads are daemons, as in ``daemon_threads.py``: a call stuck in the database holds no
process exit. They are started on demand, up to ``most`` (anyio's default too), and kept. A
task cancelled while its call runs stops waiting for it: the call runs to its end (a write
commits or rolls back on its own) and its outcome is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["WorkerThreads"]

R = TypeVar("R")
# The caller's context, the call, the loop and future to answer, and whether it was given up
# (set under the pool's lock when no thread could be started to run it).
_Loop = asyncio.AbstractEventLoop
_Job = tuple[contextvars.Context, Callable[[], Any], _Loop, asyncio.Future[Any], list[bool]]


def _deliver(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the awaiting task was cancelled: nobody wants the outcome
        return
    if isinstance(error, StopIteration):  # a future refuses it (TypeError): the task would hang
        error = RuntimeError(f"the call raised StopIteration: {error!r}")
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class WorkerThreads:
    """At most ``most`` daemon threads running blocking calls for one event loop's tasks."""

    def __init__(self, most: int = 40, *, name: str = "active-memory:service") -> None:
        if most < 1:
            raise ValueError("a worker pool needs at least one thread")
        self._most = most
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # threads waiting for a job that no job put meanwhile has claimed
        self._queued = 0  # jobs put while every thread was busy and none could be started
        self._stopped = False

    async def run(self, call: Callable[..., R], *args: Any) -> R:
        """``call(*args)`` on a worker thread, in a copy of the caller's context."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        context = contextvars.copy_context()
        job = call if not args else lambda: call(*args)
        given_up = [False]
        start = False
        with self._lock:
            if self._stopped:
                raise RuntimeError("the worker threads are stopped (the service was closed)")
            if self._idle:
                self._idle -= 1  # the job of a thread waiting
            elif self._threads < self._most:
                self._threads += 1
                start = True
            else:
                self._queued += 1  # the job of the first thread free
            # Put under the lock (a C queue's put never blocks): a stop() from now on puts its
            # threads' ends after this job, which a thread then runs before it ends.
            self._jobs.put((context, job, loop, future, given_up))
        if start:  # outside the lock: a start waits for the new thread to run
            try:
                threading.Thread(target=self._serve, name=self._name, daemon=True).start()
            except RuntimeError:  # the system would start no more threads
                with self._lock:
                    self._threads -= 1
                    if not self._threads:  # none to run it, ever: it must not run later
                        given_up[0] = True
                        raise
                    self._queued += 1  # the job of the first thread free
        return await future

    def stop(self) -> None:
        """Let every thread end once the jobs before this call are done; a later
        :meth:`run` raises RuntimeError rather than wait for a thread that will not come."""
        with self._lock:
            self._stopped = True
            threads = self._threads
        for _ in range(threads):
            self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                with self._lock:
                    self._threads -= 1
                return
            context, call, loop, future, given_up = job
            with self._lock:
                skipped = given_up[0]
            if skipped:  # its caller was told it failed
                del job, context, call, loop, future, given_up
                continue
            try:
                result, error = context.run(call), None
            except BaseException as failure:  # delivered to the awaiting task, never lost here
                result, error = None, failure
            with contextlib.suppress(RuntimeError):  # a closed loop: its task is long gone
                loop.call_soon_threadsafe(_deliver, future, result, error)
            # Nothing of the call (its context's values included) is kept while idle.
            del job, context, call, loop, result, error, future, given_up
            with self._lock:
                if self._queued:
                    self._queued -= 1
                else:
                    self._idle += 1
