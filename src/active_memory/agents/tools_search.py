"""``search_text``: lines matching a text or a model-chosen regex, bounded in time and size.

The pattern comes from the model, so it is treated as hostile. It is capped in length and in
counted repetitions (the ``regex`` engine expands ``x{n}`` when compiling, so a short pattern
could otherwise take gigabytes), and every match runs under a timeout of the ``regex`` package:
a catastrophic pattern such as ``(a|aa)+b`` ends in an error result within seconds instead of
running on in a worker thread past the session's deadline. Matching releases the GIL
(``concurrent=True``), so the event loop and other sessions keep running meanwhile.

A match that exists only inside a credential is not reported, so the model cannot probe a
secret's characters one pattern at a time.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import regex

from active_memory.agents.tools_files import (
    KeyBlocks,
    LineReader,
    Refused,
    decode,
    is_binary,
    is_git_internal,
)
from active_memory.evidence.redact import redact_text

__all__ = ["MAX_PATTERN_CHARS", "compile_pattern", "search_files", "walk"]

MAX_PATTERN_CHARS = 500
# Pattern length times the product of its counted repetitions: about 80 bytes each compiled.
_MAX_EXPANSION = 100_000
_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")
_MAX_FILE = 2 * 1024 * 1024
_MAX_FILES = 20_000
_MAX_BYTES = 64 * 1024 * 1024
_MATCH_LINE_BYTES = 4096
_SHOWN_CHARS = 300


def compile_pattern(pattern: str, *, is_regex: bool) -> regex.Pattern[str]:
    """The compiled pattern, or :class:`Refused` naming what to change."""
    if not pattern:
        raise Refused("the pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise Refused(
            f"the pattern is {len(pattern)} characters long; use at most {MAX_PATTERN_CHARS}"
        )
    if not is_regex:
        return regex.compile(regex.escape(pattern))
    expansion = len(pattern)
    for counted in _COUNTED.finditer(pattern):
        expansion *= max([int(bound) for bound in counted.groups() if bound] or [1])
        if expansion > _MAX_EXPANSION:
            raise Refused(
                f"the regex {pattern!r} repeats too much to compile ({counted.group(0)}); "
                "use smaller counts, + or *"
            )
    try:
        return regex.compile(pattern)
    except (regex.error, OverflowError, ValueError) as e:
        raise Refused(f"the regex {pattern!r} does not compile: {e}") from e


def search_files(
    files: list[Path],
    display: Callable[[Path], str],
    compiled: regex.Pattern[str],
    *,
    wanted: int,
    deadline: float | None,
    match_seconds: float,
) -> str:
    """A summary line, then ``path:line: text`` for each match (not yet bounded in bytes).

    One match (one line) may take ``match_seconds``, or less when the deadline is nearer.
    """
    limits = _Limits(deadline, match_seconds)
    matches: list[str] = []
    stopped = ""
    scanned_files = scanned_bytes = 0
    for path in files:
        if deadline is not None and time.monotonic() >= deadline:
            stopped = "the session deadline"
            break
        if scanned_files >= _MAX_FILES or scanned_bytes >= _MAX_BYTES:
            stopped = "the scan limit"
            break
        size = path.stat().st_size
        if size > _MAX_FILE or is_binary(path):
            continue
        scanned_files += 1
        scanned_bytes += size
        stopped = _search_file(path, display(path), compiled, matches, wanted, limits)
        if stopped:
            break
    summary = f"{len(matches)} match(es) in {scanned_files} file(s)"
    if stopped:
        summary += f"; stopped at {stopped}"
    return summary + "\n" + ("\n".join(matches) if matches else "(no matches)")


def _search_file(
    path: Path,
    shown: str,
    compiled: regex.Pattern[str],
    matches: list[str],
    wanted: int,
    limits: _Limits,
) -> str:
    """Adds this file's matches; returns why the search stopped, or '' to go on."""
    keys = KeyBlocks()
    with path.open("rb") as handle:
        reader = LineReader(handle)
        number = 0
        while (line := reader.next(_MATCH_LINE_BYTES)) is not None:
            number += 1
            if keys.feed(line.data):
                continue
            text = decode(line.data, cut=line.cut)
            found = limits.found(compiled, text, shown)
            if found is None:
                return "the session deadline"
            if not found:
                continue
            redacted = redact_text(text)
            if redacted != text and not limits.found(compiled, redacted, shown):
                continue
            matches.append(f"{shown}:{number}: {redacted[:_SHOWN_CHARS]}")
            if len(matches) >= wanted:
                return f"{wanted} matches"
    return ""


@dataclass(frozen=True, slots=True)
class _Limits:
    deadline: float | None
    match_seconds: float

    def found(self, compiled: regex.Pattern[str], text: str, shown: str) -> bool | None:
        """Whether ``text`` matches; None when the session's deadline ends the search."""
        seconds = self.match_seconds
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                return None
            seconds = min(seconds, remaining)
        try:
            return compiled.search(text, concurrent=True, timeout=seconds) is not None
        except TimeoutError:
            if seconds < self.match_seconds:
                return None
            raise Refused(
                f"pattern too slow: matching one line of {shown} took over {seconds:g} s; "
                "use a literal or simpler pattern"
            ) from None


def walk(root: Path, start: Path) -> list[Path]:
    """Files under ``start`` in a stable order, skipping git internals and links that leave."""
    if start.is_file():
        return [start]
    found: list[Path] = []
    for folder, dirs, files in os.walk(start):
        dirs[:] = sorted(name for name in dirs if not is_git_internal((name,)))
        for name in sorted(files):
            path = Path(folder) / name
            if is_git_internal((name,)):
                continue
            if path.is_symlink():
                target = path.resolve()
                if (
                    not target.is_relative_to(root)
                    or not target.is_file()
                    or is_git_internal(target.relative_to(root).parts)
                ):
                    continue
            found.append(path)
            if len(found) > _MAX_FILES:
                return found
    return found
