r"""``search_text``: lines matching a text or a model-chosen regex, bounded in time and size.

The pattern comes from the model, so it is treated as hostile. It is capped in length and in
counted repetitions (the ``regex`` engine expands ``x{n}`` when compiling, so a short pattern
could otherwise take gigabytes), and every match runs under a timeout of the ``regex`` package:
a catastrophic pattern such as ``(a|aa)+b`` ends in an error result within seconds instead of
running on in a worker thread past the session's deadline. Matching releases the GIL
(``concurrent=True``), so the event loop and other sessions keep running meanwhile.

A pattern matches lines, one at a time. Calling the engine once per line costs microseconds a
line, ten times a plain scan, so a pattern that looks nowhere beyond its own line (no
lookaround, no ``\A``/``\Z``/``\G``/``\K``, no fuzzy or reverse matching) is run over the whole
file first: wherever a line matches on its own, the whole-text search finds a match starting
at or before it, so only the lines where whole-text matches start need a check of their own.

A match that exists only inside a credential is not reported, so the model cannot probe a
secret's characters one pattern at a time.
"""

from __future__ import annotations

import os
import re
import stat
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import regex

from active_memory.agents.tools_files import (
    KeyBlocks,
    Refused,
    is_binary,
    is_git_internal,
    open_file,
)
from active_memory.evidence.redact import redact_text

__all__ = ["MAX_PATTERN_CHARS", "Pattern", "compile_pattern", "search_files", "walk"]

MAX_PATTERN_CHARS = 500
# Pattern length times the product of its counted repetitions: about 80 bytes each compiled.
_MAX_EXPANSION = 100_000
_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")
# What may make a match depend on text outside its line, or not be the leftmost one: any
# ``(?`` group but plain, named, atomic, branch-reset, comment and flag groups; the anchors
# \A \Z \z \G and \K; braces that are not a counted repetition (fuzzy constraints).
_LOOKS_BEYOND = re.compile(
    r"\(\?(?![:>|#]|P[<=>]|<[A-Za-z_]|[imsxuaLfwV0-9-]+[:)])|\\[AZzGK]|\{(?!\d*(?:,\d*)?\})"
)
_MAX_FILE = 2 * 1024 * 1024
_MAX_FILES = 20_000
_MAX_BYTES = 64 * 1024 * 1024
_MATCH_LINE_CHARS = 4096
_SHOWN_CHARS = 300


@dataclass(frozen=True, slots=True)
class Pattern:
    """A compiled pattern (MULTILINE, so ``^``/``$`` mean line ends in a whole file too)."""

    compiled: regex.Pattern[str]
    whole_file: bool


def compile_pattern(pattern: str, *, is_regex: bool) -> Pattern:
    """The compiled pattern, or :class:`Refused` naming what to change."""
    if not pattern:
        raise Refused("the pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise Refused(
            f"the pattern is {len(pattern)} characters long; use at most {MAX_PATTERN_CHARS}"
        )
    if not is_regex:
        return Pattern(regex.compile(regex.escape(pattern)), whole_file=True)
    expansion = len(pattern)
    for counted in _COUNTED.finditer(pattern):
        expansion *= max([int(bound) for bound in counted.groups() if bound] or [1])
        if expansion > _MAX_EXPANSION:
            raise Refused(
                f"the regex {pattern!r} repeats too much to compile ({counted.group(0)}); "
                "use smaller counts, + or *"
            )
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except (regex.error, OverflowError, ValueError) as e:
        raise Refused(f"the regex {pattern!r} does not compile: {e}") from e
    return Pattern(compiled, whole_file=not _LOOKS_BEYOND.search(pattern))


class _DeadlineReached(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Matcher:
    pattern: Pattern
    deadline: float | None
    match_seconds: float

    def search(self, text: str, shown: str, pos: int = 0) -> regex.Match[str] | None:
        """The first match at or after ``pos``, within the time one match may take."""
        seconds = self.match_seconds
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise _DeadlineReached
            seconds = min(seconds, remaining)
        try:
            return self.pattern.compiled.search(text, pos, concurrent=True, timeout=seconds)
        except TimeoutError:
            if seconds < self.match_seconds:
                raise _DeadlineReached from None
            raise Refused(
                f"pattern too slow: matching one line of {shown} took over {seconds:g} s; "
                "use a literal or simpler pattern"
            ) from None


def search_files(
    files: list[Path],
    display: Callable[[Path], str],
    pattern: Pattern,
    *,
    wanted: int,
    deadline: float | None,
    match_seconds: float,
    found: set[Path] | None = None,
) -> str:
    """A summary line, then ``path line N: text`` for each match (not yet bounded in bytes).

    The line number follows the word ``line``, apart from the path, so the path reads as the
    reference to cite and the number does not look like part of it. One match may take
    ``match_seconds``, or less when the deadline is nearer. Files with a match are added to
    ``found``.
    """
    matcher = _Matcher(pattern, deadline, match_seconds)
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
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            continue  # a FIFO or a device: opening or reading it could block for ever
        size = info.st_size
        try:
            if size > _MAX_FILE or is_binary(path):
                continue
        except Refused:
            continue  # swapped for a special file since the walk: skipped like one
        scanned_files += 1
        scanned_bytes += size
        try:
            before = len(matches)
            _search_file(path, display(path), matcher, matches, wanted)
            if found is not None and len(matches) > before:
                found.add(path)
        except _DeadlineReached:
            stopped = "the session deadline"
            break
        if len(matches) >= wanted:
            stopped = f"{wanted} matches"
            break
    summary = f"{len(matches)} match(es) in {scanned_files} file(s)"
    if stopped:
        summary += f"; stopped at {stopped}"
    return summary + "\n" + ("\n".join(matches) if matches else "(no matches)")


def _search_file(
    path: Path, shown: str, matcher: _Matcher, matches: list[str], wanted: int
) -> None:
    """Adds this file's matches, up to ``wanted`` in all."""
    # Files are at most 2 MiB here; lines end at "\n" only, as read_file counts them.
    try:
        handle = open_file(path)
    except Refused:
        return  # swapped for a special file since the walk: skipped like one
    with handle:
        data = handle.read(_MAX_FILE + 1)
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    hidden = _key_lines(lines) if "PRIVATE KEY" in text else frozenset()
    candidates = (
        _candidates(text, lines, shown, matcher)
        if matcher.pattern.whole_file
        else iter(range(len(lines)))
    )
    for index in candidates:
        if index in hidden:
            continue
        line = lines[index][:_MATCH_LINE_CHARS]
        if matcher.search(line, shown) is None:
            continue
        redacted = redact_text(line)
        if redacted != line and matcher.search(redacted, shown) is None:
            continue
        matches.append(f"{shown} line {index + 1}: {redacted[:_SHOWN_CHARS]}")
        if len(matches) >= wanted:
            return


def _candidates(text: str, lines: list[str], shown: str, matcher: _Matcher) -> Iterator[int]:
    """Indexes of the lines where a whole-text match starts; no other line can match alone."""
    starts = [0, *accumulate(len(line) + 1 for line in lines)][: len(lines)]
    index = 0
    while index < len(lines):
        found = matcher.search(text, shown, starts[index])
        if found is None:
            return
        index = bisect_right(starts, found.start()) - 1
        yield index
        index += 1


def _key_lines(lines: list[str]) -> frozenset[int]:
    keys = KeyBlocks()
    return frozenset(
        index for index, line in enumerate(lines) if keys.feed(line.encode("utf-8", "replace"))
    )


def walk(root: Path, start: Path) -> list[Path]:
    """Files under ``start`` in a stable order, skipping git internals and links that leave."""
    if start.is_file():
        return [start]
    if not start.is_dir():
        return []  # a FIFO, a device or a socket: nothing to search
    found: list[Path] = []
    for folder, dirs, files in os.walk(start):
        dirs[:] = sorted(name for name in dirs if not is_git_internal((name,)))
        for name in sorted(files):
            path = Path(folder) / name
            if is_git_internal((name,)):
                continue
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue  # gone since the listing
            if not stat.S_ISLNK(mode) and not stat.S_ISREG(mode):
                continue  # FIFOs, devices and sockets are never opened
            if stat.S_ISLNK(mode):
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
