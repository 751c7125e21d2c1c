"""Standard input read one bounded line at a time, for the stdio transport.

The SDK's stdio transport reads a message per line with no bound, so a client (or anything
writing to the pipe) could make the server hold a gigabyte waiting for a newline. This reader
hands the transport lines of at most :data:`MAX_MESSAGE_BYTES`; a longer line is read to its
end in bounded pieces and dropped, and an empty line stands in for it, which the transport
reports as an unparsable message while the server keeps serving.
"""

from __future__ import annotations

from typing import BinaryIO

__all__ = ["MAX_MESSAGE_BYTES", "BoundedLines"]

# A recall command may be 64 Ki characters; JSON escaping may grow one six-fold.
MAX_MESSAGE_BYTES = 1024 * 1024
_SKIP_CHUNK = 64 * 1024


class BoundedLines:
    """A text reader whose ``readline`` returns whole lines of at most ``max_bytes``."""

    def __init__(self, buffer: BinaryIO, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._buffer = buffer
        self._max_bytes = max_bytes
        self.dropped = 0

    def readline(self) -> str:
        """The next line (``""`` at the end of input); an over-long line reads as ``"\\n"``."""
        line = self._buffer.readline(self._max_bytes + 1)
        if len(line) <= self._max_bytes or line.endswith(b"\n"):
            return line.decode("utf-8", "replace")
        while True:  # the rest of the over-long line, never held whole
            rest = self._buffer.readline(_SKIP_CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        self.dropped += 1
        return "\n"
