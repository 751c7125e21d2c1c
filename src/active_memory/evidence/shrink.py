"""Largest-first shrinking: a water level over sizes, and string cuts inside a JSON value.

Cutting everything above one level removes bytes from the largest items first and leaves the
small ones whole, which is what "shrink the largest first" means when done in one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from active_memory.evidence.budget import cut_text, json_size, utf8_len

__all__ = ["shrink_strings", "water_level"]


def water_level(sizes: Sequence[int], excess: int, floor: int = 0) -> int:
    """The highest level L (≥ ``floor``) such that cutting every size down to L removes at least
    ``excess`` bytes; ``floor`` when even that is not enough."""
    if excess <= 0 or not sizes:
        return max(sizes, default=floor)

    def removed(level: int) -> int:
        return sum(size - level for size in sizes if size > level)

    if removed(floor) < excess:
        return floor
    low, high = floor, max(sizes)
    while low < high:
        middle = (low + high + 1) // 2
        if removed(middle) >= excess:
            low = middle
        else:
            high = middle - 1
    return low


def _strings(value: Any, found: list[tuple[Any, Any, int]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                found.append((value, key, utf8_len(item)))
            else:
                _strings(item, found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                found.append((value, index, utf8_len(item)))
            else:
                _strings(item, found)


def shrink_strings(
    value: Any,
    max_bytes: int,
    *,
    floor: int = 64,
    on_cut: Callable[[int], None] | None = None,
) -> Any:
    """Cut the longest strings in ``value`` (mutated in place) until its JSON fits ``max_bytes``
    or every string is down to ``floor`` bytes; ``on_cut(bytes)`` is called per cut string."""
    for _ in range(8):
        excess = json_size(value) - max_bytes
        if excess <= 0:
            break
        found: list[tuple[Any, Any, int]] = []
        _strings(value, found)
        level = water_level([size for _, _, size in found], excess + 24 * len(found), floor)
        changed = False
        for container, key, size in found:
            if size > level:
                text, cut = cut_text(container[key], max(level, floor))
                if cut:
                    container[key] = text
                    changed = True
                    if on_cut is not None:
                        on_cut(cut)
        if not changed:
            break
    return value
