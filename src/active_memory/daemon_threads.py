"""Blocking work under a deadline, in threads the process never waits for.

``asyncio.to_thread`` runs work in the loop's default executor, and both ``asyncio.run`` (it
shuts that executor down) and the interpreter (it joins executor threads at exit) wait for every
such thread to finish. A worker stuck in a system call (opening a FIFO that someone planted in a
checkout, reading a hung network mount) would then hold the postmortem process for good, long
after its deadline fired. A daemon thread is waited for by no one: the awaiting task may be
cancelled at the deadline, and the process still exits, whatever the thread is doing.

Only work that may be abandoned goes here (reads, evidence building, investigation tools);
a store write stays where it waits for its own receipt.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_daemon_thread"]

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
