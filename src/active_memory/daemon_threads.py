"""Blocking work under a deadline, in threads the process never waits for.

``asyncio.to_thread`` runs work in the loop's default executor, and both ``asyncio.run`` (it
shuts that executor down) and the interpreter (it joins executor threads at exit) wait for every
such thread to finish. A worker stuck in a system call (opening a FIFO that someone planted in a
checkout, reading a hung network mount) would then hold the postmortem process for good, long
after its deadline fired. A daemon thread is waited for by no one: the awaiting task may be
cancelled at the deadline, and the process still exits, whatever the thread is doing.

Only work that may be abandoned goes here (reads, evidence building, investigation tools);
a store write stays where it waits for its own receipt. A server embedded in a process (the
memory service's and the browser's uvicorn, for tests and hosts) runs in such a thread too:
:func:`serve_in_daemon_thread` starts it, :func:`wait_until_serving` waits for it to listen.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import socket
import threading
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = [
    "in_daemon_thread",
]

T = TypeVar("T")


async def in_daemon_thread(function: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``function(*args, **kwargs)`` in a new daemon thread; cancelling the await abandons it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(result: T | None, error: BaseException | None) -> None:
        if future.done():  # the awaiting task was cancelled: nobody wants the result
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def work() -> None:
        try:
            result = context.run(function, *args, **kwargs)
        except BaseException as error:  # delivered to the awaiting task, never lost here
            outcome: tuple[T | None, BaseException | None] = (None, error)
        else:
            outcome = (result, None)
        # A closed loop means the awaiting task is long gone.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(deliver, *outcome)

    name = f"active-memory:{getattr(function, '__name__', 'work')}"
    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


class Serving(Protocol):
    """A server that serves on sockets it is given until told to exit (``uvicorn.Server``)."""

    started: bool

    def run(self, sockets: list[socket.socket] | None = None) -> None: ...


def start_serving(
    server: Serving, bound: socket.socket, *, what: str, timeout_s: float = 15.0
) -> threading.Thread:
    """Run ``server`` on the already bound socket in a daemon thread of its own and return the
    thread once the server has started; RuntimeError saying ``{what} did not start`` when the
    thread ended or ``timeout_s`` passed first."""
    thread = threading.Thread(target=server.run, kwargs={"sockets": [bound]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start")
        time.sleep(0.01)
    return thread
