"""Compare what a command printed with what a page shows, and say where they differ.

Comparison is line by line after :data:`VOLATILE` normalisation of both sides (times and dates:
values no two runs share). On the page, a line ``…`` stands for any number of lines, and a
:data:`PLACEHOLDERS` name stands for a value that changes with the prompts or the run (a
sha256, a port): the page never pastes such a value, the real output supplies it. Nothing else
is loosened, so a changed count, message or order fails.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from docs.pages import Block

ELISION = "…"

# Name -> what it stands for on a page. Only values that change without the documented
# behaviour changing: hashes of prompts and contracts, ports, tokens drawn at random.
PLACEHOLDERS = {
    "<sha256>": r"[0-9a-f]{64}",
    "<sha16>": r"[0-9a-f]{16}",  # the short form reports print
    "<port>": r"[0-9]{1,5}",
    "<n>": r"[0-9]+",  # a count that follows the prompt's length (tokens, lines)
    "<hex>": r"[0-9a-f]+",  # an id drawn at random
    "<token>": r"[A-Za-z0-9_-]+",  # a secret drawn at random
}
_PLACEHOLDER = re.compile("|".join(re.escape(name) for name in PLACEHOLDERS))

# Applied to the page and to the real output alike: values no two runs share.
VOLATILE: dict[str, tuple[re.Pattern[str], str]] = {
    "milliseconds": (re.compile(r" *\b[0-9]+ ms\b"), " <ms> ms"),
    "seconds": (re.compile(r"\bin [0-9]+\.[0-9]+ s\b"), "in <s> s"),
    "json times": (re.compile(r'("(?:time_ms|duration_ms|elapsed_ms)": ?)[0-9]+'), r"\1<ms>"),
    "timestamps": (
        re.compile(
            r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
            r"(Z|[+-][0-9]{2}:[0-9]{2})?"
        ),
        "<time>",
    ),
    "backup stamps": (re.compile(r"\.[0-9]{14}(-[0-9]+)?\.bak\b"), ".<time>.bak"),
}
# Opt-in per block: lesson ids drawn at random (a dry run's, a host's without sequential ids).
NEW_IDS = (re.compile(r"\blesson-[0-9A-HJKMNP-TV-Z]{26}\b"), "lesson-<new id>")


def normalise(text: str, new_ids: bool = False) -> list[str]:
    for pattern, replacement in VOLATILE.values():
        text = pattern.sub(replacement, text)
    if new_ids:
        text = NEW_IDS[0].sub(NEW_IDS[1], text)
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@cache
def _pattern(line: str) -> re.Pattern[str] | None:
    if _PLACEHOLDER.search(line) is None:
        return None
    parts = _PLACEHOLDER.split(line)
    names = _PLACEHOLDER.findall(line)
    regex = ""
    for part, name in zip(parts, names, strict=False):
        # A right-aligned column: the value's width sets how many spaces come before it.
        padded = re.fullmatch(r"(.*?)(  +)", part, re.S)
        regex += re.escape(padded[1]) + " +" if padded else re.escape(part)
        regex += f"(?:{PLACEHOLDERS[name]})"
    return re.compile(regex + re.escape(parts[-1]))


def _same(shown: str, real: str) -> bool:
    pattern = _pattern(shown)
    return shown == real if pattern is None else pattern.fullmatch(real) is not None


def align(shown: list[str], real: list[str]) -> list[tuple[str, str]]:
    """The cheapest alignment of the page's lines with the real ones, as diff lines: ``" "``
    for a line both have, ``"-"`` for one only the page has, ``"+"`` for one only the command
    printed, ``"~"`` for one a ``…`` line of the page stands for (at no cost)."""
    rows, cols = len(shown), len(real)
    cost = [[0] * (cols + 1) for _ in range(rows + 1)]
    for j in range(cols - 1, -1, -1):
        cost[rows][j] = cost[rows][j + 1] + 1
    for i in range(rows - 1, -1, -1):
        elided = shown[i].strip() == ELISION
        cost[i][cols] = cost[i + 1][cols] + (0 if elided else 1)
        for j in range(cols - 1, -1, -1):
            if elided:
                cost[i][j] = min(cost[i + 1][j], cost[i][j + 1])
                continue
            best = min(cost[i + 1][j], cost[i][j + 1]) + 1
            if _same(shown[i], real[j]):
                best = min(best, cost[i + 1][j + 1])
            cost[i][j] = best
    lines: list[tuple[str, str]] = []
    i = j = 0
    while i < rows or j < cols:
        elided = i < rows and shown[i].strip() == ELISION
        same = i < rows and j < cols and _same(shown[i], real[j])
        if elided:
            lines.append((" ", shown[i]))
            while j < cols and cost[i][j] == cost[i][j + 1]:
                lines.append(("~", real[j]))  # what the elision stands for here
                j += 1
            i += 1
        elif same and cost[i][j] == cost[i + 1][j + 1]:
            lines.append((" ", shown[i]))
            i, j = i + 1, j + 1
        elif i < rows and cost[i][j] == cost[i + 1][j] + 1:
            lines.append(("-", shown[i]))
            i += 1
        else:
            lines.append(("+", real[j]))
            j += 1
    return lines


def compare(where: Block | str, shown_text: str, real_text: str, *, new_ids: bool = False) -> None:
    """Fail, naming the page and block and showing the difference, unless the texts match."""
    label = where.where if isinstance(where, Block) else where
    lines = align(normalise(shown_text, new_ids), normalise(real_text, new_ids))
    changed = [n for n, (tag, _) in enumerate(lines) if tag in "+-"]
    if not changed:
        return
    near = sorted({n for c in changed for n in range(c - 2, c + 3) if 0 <= n < len(lines)})
    diff: list[str] = []
    for before, n in zip([-2, *near], near, strict=False):
        if n != before + 1:
            diff.append("@@")  # lines that agree, left out
        diff.append(lines[n][0] + lines[n][1])
    text = "\n".join(diff)
    pytest.fail(
        f"{label}: the output differs from the page ('-' the page, '+' the command, "
        f"'~' what a '{ELISION}' line of the page stands for)\n{text}",
        False,
    )
