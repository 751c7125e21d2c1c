"""Session files read line by line, each line parsed on its own and never trusted.

Every harness writes one JSON object per line. A line over the limit is kept as a prefix (the
pager skips the rest in fixed chunks) and reported as ``cut``; a line that is not a JSON object
(bad JSON, nesting deeper than the parser allows, an integer beyond Python's digit limit, a lone
surrogate that no UTF-8 file can hold) is reported as ``unreadable``. Neither ever raises: the
source records the line as a cut and goes on.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Generator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from active_memory.evidence.pager import Cancellation, PageLimits, iter_pages

__all__ = ["LINE_LIMIT", "SourceLine", "first_lines", "iter_lines", "parse_line"]

LINE_LIMIT = 8 << 20
_PAGE = PageLimits(max_records=256, max_bytes=256 << 10, max_line_bytes=LINE_LIMIT)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One non-blank line: ``value`` is the parsed object, or None with ``problem`` saying why.

    ``head`` is the line's text (a prefix when ``cut``); sources salvage the record's kind from
    it when the line could not be parsed.
    """

    number: int
    size: int
    value: dict[str, Any] | None
    problem: str | None
    head: str
    cut: bool = False


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(key) or _has_surrogate(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(item) for item in value)
    return False


def parse_line(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(object, None)`` or ``(None, why it is unreadable)``."""
    try:
        value = json.loads(text)
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as error:
        # Python refuses integers over 4300 digits with a ValueError naming the limit.
        return None, "a number too large" if "digits" in str(error) else "not JSON"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    # Escaped surrogates are the only way JSON text yields one; check only when one may be there.
    if ("\\ud" in text or "\\uD" in text) and _has_surrogate(value):
        return None, "a lone surrogate"
    return value, None


def iter_lines(
    path: str | os.PathLike[str],
    *,
    limit: int = LINE_LIMIT,
    cancel: Cancellation | None = None,
) -> Generator[SourceLine, None, None]:
    """Every non-blank line of ``path``, parsed; the file is open only while this iterates."""
    pages = _PAGE if limit == LINE_LIMIT else PageLimits(256, 256 << 10, limit)
    for page in iter_pages(path, pages, cancel):
        for line in page.lines:
            if line.cut:
                yield SourceLine(line.number, line.size, None, "over the line limit", line.text,
                                 cut=True)  # fmt: skip
                continue
            value, problem = parse_line(line.text)
            head = line.text if value is None else ""
            yield SourceLine(line.number, line.size, value, problem, head[:4096])


def first_lines(
    path: str | os.PathLike[str], count: int = 3, limit: int = 1 << 20
) -> list[SourceLine]:
    """The first ``count`` lines, each read up to ``limit`` bytes: enough to tell the format."""
    found: list[SourceLine] = []
    with closing(iter_lines(path, limit=limit)) as lines:
        for line in lines:
            found.append(line)
            if len(found) >= count:
                break
    return found
