"""The fenced blocks of README.md and docs/*.md, and which test claims each.

A block a test runs or compares carries an invisible tag on the line above its fence::

    <!-- example: NAME -->      code or a transcript a test runs
    <!-- output: NAME -->       output a test compares with what it ran

A shell or Python block that no test can run carries a visible line instead, right above it::

    *Not run by the tests: needs a Claude login.*

Names are unique within a page. A test claims a block with :func:`claim` at import time, so
:mod:`docs.test_pages` can check, without running anything, that every tag is claimed by some
test (no dead tags) and every shell and Python block is either claimed or marked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELL = frozenset({"bash", "sh", "console"})
PYTHON = frozenset({"python"})
# Output and data blocks: never run themselves, compared when tagged `output:`.
DATA = frozenset({"text", "json", "markdown"})
TAG = re.compile(r"<!-- (?P<kind>example|output): (?P<name>[a-z0-9][a-z0-9-]*) -->")
NOT_RUN = re.compile(r"\*Not run by the tests: (?P<why>[^*]+\.)\*")
_OPEN = re.compile(r"(?P<indent> {0,3})(?P<fence>`{3,})(?P<lang>[^`\s]*)\s*")

# Every page a reader may run blocks from; a new page must be listed (test_pages checks it).
PAGES = (
    "README.md",
    "docs/admission.md",
    "docs/changing.md",
    "docs/impact.md",
    "docs/integrations.md",
    "docs/learn.md",
    "docs/mcp.md",
    "docs/memory-init.md",
    "docs/postmortem.md",
    "docs/prompts.md",
    "docs/providers.md",
    "docs/recall.md",
    "docs/runs.md",
    "docs/store.md",
    "docs/team.md",
    "docs/ui.md",
)


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    body: str  # without the fences, the fence's indentation removed
    kind: str | None = None  # "example" or "output" when tagged
    name: str | None = None
    not_run: str | None = None  # the reason a visible marker gives

    @property
    def where(self) -> str:
        label = f" ({self.kind}: {self.name})" if self.name else ""
        return f"{self.page}:{self.line}{label}"


class PageError(AssertionError):
    """A page whose fences or tags cannot be read as this module describes."""


def parse(page: str, text: str) -> tuple[Block, ...]:
    """The fenced blocks of ``text`` (CommonMark fences, backticks only), with their labels."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _OPEN.fullmatch(lines[index])
        if opening is None:
            index += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        closing = re.compile(rf" {{0,3}}`{{{len(fence)},}}\s*")
        end = next((n for n in range(index + 1, len(lines)) if closing.fullmatch(lines[n])), None)
        if end is None:
            raise PageError(f"{page}:{index + 1}: a fence that is never closed")
        body = "\n".join(_dedent(line, indent) for line in lines[index + 1 : end])
        kind = name = not_run = None
        above = _paragraph_above(lines, index)
        if (tag := TAG.fullmatch(above)) is not None:
            kind, name = tag["kind"], tag["name"]
        elif (marker := NOT_RUN.fullmatch(above)) is not None:
            not_run = marker["why"]
        blocks.append(Block(page, index + 1, opening["lang"], body, kind, name, not_run))
        index = end + 1
    return tuple(blocks)


def _dedent(line: str, indent: int) -> str:
    return line[min(indent, len(line) - len(line.lstrip(" "))) :]


def _paragraph_above(lines: list[str], index: int) -> str:
    """The paragraph right above the fence, on one line: its tag or its marker."""
    above = lines[:index]
    while above and not above[-1].strip():
        above.pop()
    paragraph: list[str] = []
    while above and above[-1].strip():
        paragraph.insert(0, above.pop().strip())
    return " ".join(paragraph)


@cache
def blocks(page: str) -> tuple[Block, ...]:
    return parse(page, (ROOT / page).read_text("utf-8"))


CLAIMS: set[tuple[str, str, str]] = set()


def claim(page: str, name: str, kind: str = "example") -> Block:
    """The block of ``page`` tagged ``<!-- kind: name -->``, recorded as used by a test."""
    found = [b for b in blocks(page) if b.kind == kind and b.name == name]
    if len(found) != 1:
        raise PageError(f"{page}: {len(found)} blocks are tagged <!-- {kind}: {name} -->")
    CLAIMS.add((page, kind, name))
    return found[0]


def output(page: str, name: str) -> Block:
    return claim(page, name, "output")
