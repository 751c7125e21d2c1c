"""Harness timestamps as epoch milliseconds: ISO 8601 strings and epoch numbers alike."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["iso_ms", "stamp_ms"]

# Epoch values above this are milliseconds, below it seconds (2286 in seconds, 1970 in ms).
_MS_THRESHOLD = 10_000_000_000


def iso_ms(stamp: Any) -> int | None:
    """An ISO 8601 string (``Z`` or an offset) as epoch milliseconds; None when it is not one."""
    if not isinstance(stamp, str) or len(stamp) > 64:
        return None
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # harnesses write UTC; some leave the zone out
    millis = int(moment.timestamp() * 1000)
    return millis if millis >= 0 else None


def stamp_ms(stamp: Any) -> int | None:
    """An ISO string or an epoch number (seconds or milliseconds) as epoch milliseconds."""
    if isinstance(stamp, bool):
        return None
    if isinstance(stamp, int | float):
        if not 0 <= stamp < 1e15:
            return None
        return int(stamp if stamp >= _MS_THRESHOLD else stamp * 1000)
    return iso_ms(stamp)
