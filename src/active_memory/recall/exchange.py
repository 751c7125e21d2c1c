"""The bounds of one hook exchange, the empty answer, and which ids may be recorded.

Shared by the broker, its wire protocols and the hook dispatch, which also answers without a
broker (the hook fallback): that is why they live apart from the asyncio code. The command
helper keeps its own copy of the two sizes (it runs without the package); a test keeps them in
step.
"""

from __future__ import annotations

__all__ = ["EMPTY_ANSWER", "MAX_ID_CHARS", "MAX_REQUEST_BYTES", "MAX_RESPONSE_BYTES", "id_field"]

MAX_REQUEST_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 32 * 1024
# What every harness reads as "nothing to add": the tool runs as it would have.
EMPTY_ANSWER = b"{}"

# Ids (node, conversation, execution; a payload's session id) longer than this are dropped.
MAX_ID_CHARS = 512
# C0 and C1 controls, DEL, line and paragraph separators, and the bidirectional overrides that
# would let an id rewrite how a manifest line reads.
_CONTROL = frozenset(
    [*map(chr, range(0x20)), *map(chr, range(0x7F, 0xA0)), "\u2028", "\u2029",
     *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]
)  # fmt: skip


def id_field(value: object) -> str | None:
    """An id fit to record in the delivery manifest, else None (the caller drops it).

    At most MAX_ID_CHARS characters, none of them a control character, a line separator, a
    bidirectional override or a lone surrogate.
    """
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        return None
    if not _CONTROL.isdisjoint(value):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON escape
        return None
    return value
