"""The bounds of one hook exchange and the empty answer.

Shared by the broker, its wire protocols and the hook dispatch, which also answers without a
broker (the hook fallback): that is why they live apart from the asyncio code. The command
helper keeps its own copy of the two sizes (it runs without the package); a test keeps them in
step.
"""

from __future__ import annotations

__all__ = ["EMPTY_ANSWER", "MAX_REQUEST_BYTES", "MAX_RESPONSE_BYTES"]

MAX_REQUEST_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 32 * 1024
# What every harness reads as "nothing to add": the tool runs as it would have.
EMPTY_ANSWER = b"{}"
