"""Standard input read one bounded line at a time, for the stdio transport.

The SDK's stdio transport reads a message per line with no bound, so a client (or anything
writing to the pipe) could make the server hold a gigabyte waiting for a newline. This reader
hands the transport lines of at most :data:`MAX_MESSAGE_BYTES`; a longer line is read to its
end in bounded pieces and dropped, and an empty line stands in for it, which the transport
reports as an unparsable message while the server keeps serving.

Each line is read in a daemon thread of its own (:class:`AsyncLines`), from the descriptor
itself rather than a buffered file: a read the event loop stops waiting for (SIGINT while the
client is quiet) is abandoned, and neither a worker thread the interpreter would join at exit
nor a buffered reader's lock held by that thread keeps the process alive.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["MAX_MESSAGE_BYTES", "AsyncLines", "BoundedLines"]

# A recall command may be 64 Ki characters; JSON escaping may grow one six-fold.
MAX_MESSAGE_BYTES = 1024 * 1024
_CHUNK = 64 * 1024


class BoundedLines:
    """Lines of at most ``max_bytes`` from ``read`` (``os.read`` of a descriptor, or a file's
    ``read``), read in pieces of 64 KiB; ``readline`` returns ``""`` at the end of input."""

    def __init__(self, read: Callable[[int], bytes], max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._read = read
        self._max_bytes = max_bytes
        self._pending = bytearray()
        self._skipping = False  # inside an over-long line: its bytes are discarded as they come
        self.dropped = 0

    def readline(self) -> str:
        """The next line; an over-long line reads as ``"\\n"``."""
        while True:
            newline = self._pending.find(b"\n")
            if newline >= 0:
                line = bytes(self._pending[: newline + 1])
                del self._pending[: newline + 1]
                if self._skipping or len(line) > self._max_bytes:
                    self._skipping = False
                    self.dropped += 1
                    return "\n"
                return line.decode("utf-8", "replace")
            if self._skipping or len(self._pending) > self._max_bytes:
                self._skipping = True
                self._pending.clear()  # never held whole
            chunk = self._read(_CHUNK)
            if not chunk:
                rest, skipped = bytes(self._pending), self._skipping
                self._pending.clear()
                self._skipping = False
                if skipped:
                    self.dropped += 1
                    return "\n"
                return rest.decode("utf-8", "replace")
            self._pending += chunk


class AsyncLines:
    """``lines`` as the async iterator of text lines the SDK's stdio transport reads."""

    def __init__(self, lines: BoundedLines) -> None:
        self._lines = lines

    def __aiter__(self) -> AsyncLines:
        return self

    async def __anext__(self) -> str:
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        outcome: list[str | BaseException] = []

        def read() -> None:
            try:
                outcome.append(self._lines.readline())
            except BaseException as failure:  # handed to the loop, raised there
                outcome.append(failure)
            # Once the server stopped waiting, nobody wants this line.
            with contextlib.suppress(anyio.RunFinishedError):
                anyio.from_thread.run_sync(done.set, token=token)

        threading.Thread(target=read, name="active-memory mcp stdin", daemon=True).start()
        await done.wait()
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        if not result:
            raise StopAsyncIteration
        return result
