"""Paths in the evidence: relative to the run's workspace, and no one's home directory.

A specialist cites repository files as workspace-relative paths, and the evidence should not
tell it (or anyone reading a saved prompt) who the user is. So, deterministically, in transcript
texts (messages, tool inputs, tool outputs), completions, the initial input and receipt paths:

- an absolute path inside the workspace (the checkout, or the session's ``cwd``) becomes
  relative to it: ``/home/alice/shop/src/app.py`` gives ``src/app.py``, and the workspace itself
  gives ``.``;
- any other path under a home directory has that home replaced by ``~``: ``/home/alice/.npmrc``
  and ``/Users/bob/notes.txt`` give ``~/.npmrc`` and ``~/notes.txt`` (``/root`` and
  ``C:\\Users\\carol`` too). ``~`` stands for a home directory, not necessarily the user's;
- the dash-encoded form of the workspace's home that Claude Code uses for folder names
  (``/tmp/claude-1000/-home-alice-shop/tasks``) loses the user name the same way
  (``-~-shop``);
- terminal colour codes (``ESC[90m``) go first: they say nothing and would hide the path after
  them.

The runtime keeps its absolute paths but for the home (``cwd`` reads ``~/shop``): it says where
the run happened, without naming the user. So does the checkout path of a working folder whose
commit is unknown (a session's ``cwd``); an inspected checkout keeps its path as recorded, since
the specialists' tools and a replay's relocation (``$CHECKOUT``) key on it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

__all__ = ["PathRewriter"]

_PATH_CHAR = r"[\w.\-]"
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[A-Za-z]")
_HOMES = re.compile(
    r"(?<![\w.\-])(?:/home|/Users)/[^/\s\"'`:;,)(\]\[<>|*?]+|(?<![\w.\-])/root(?![\w.\-])"
)
_WINDOWS_HOMES = re.compile(r"(?<![\w.\-])[A-Za-z]:(\\\\|\\)Users\1[^\\/\s\"'`:;,)(<>|*?]+")


def _home_of(workspace: str) -> str | None:
    parts = PurePosixPath(workspace).parts
    if len(parts) >= 3 and parts[1] in ("home", "Users"):
        return "/".join(("", parts[1], parts[2]))
    if len(parts) >= 2 and parts[1] == "root":
        return "/root"
    return None


def _without_homes(value: str) -> str:
    # Substring tests first: most texts name no home, and a scan by the patterns costs more.
    if "/home/" in value or "/Users/" in value or "/root" in value:
        value = _HOMES.sub("~", value)
    return _WINDOWS_HOMES.sub("~", value) if "Users" in value else value


class PathRewriter:
    """Rewrites the paths in evidence strings for one workspace (None: only homes).

    ``also`` names other folders the run worked in that stand for the same tree: a session's
    ``cwd`` when the checkout was inspected elsewhere (a relocated copy), so the paths its tool
    calls print are relative too, not ``~/projects/…``. The workspace is tried first: a ``cwd``
    inside it stays relative to the workspace, as admission resolves a citation.
    """

    def __init__(
        self, workspace: str | os.PathLike[str] | None, *also: str | os.PathLike[str] | None
    ) -> None:
        # Per folder: its text (no match without it) and the patterns for a path inside, itself.
        self._trees: list[tuple[str, re.Pattern[str], re.Pattern[str]]] = []
        self._encoded: re.Pattern[str] | None = None
        seen: set[str] = set()
        for number, folder in enumerate((workspace, *also)):
            text = os.path.normpath(os.fspath(folder)) if folder else ""
            if number == 0:
                home = _home_of(text) if text else None
                if home is not None and home != "/root":
                    self._encoded = re.compile(re.escape(home.replace("/", "-")) + r"(?=-)")
            if not text.startswith("/") or text == "/" or text in seen:
                continue
            seen.add(text)
            escaped = re.escape(text)
            # A path inside: the workspace and its slash go, the rest is relative already; the
            # workspace itself (a name that only starts like it, spotter-2, is another) is ".".
            self._trees.append((
                text,
                re.compile(rf"(?<!{_PATH_CHAR}){escaped}/+(?=[^\s\"'`/])"),
                re.compile(rf"(?<!{_PATH_CHAR}){escaped}/?(?!{_PATH_CHAR})"),
            ))  # fmt: skip

    def text(self, value: str) -> str:
        """``value`` with workspace paths relative and homes replaced by ``~``."""
        if "/" not in value and "\\" not in value:
            return value
        if "\x1b" in value:
            value = _ANSI.sub("", value)
        for folder, inside, itself in self._trees:
            if folder in value:
                value = inside.sub("", value)
                value = itself.sub(".", value)
        value = _without_homes(value)
        if self._encoded is not None:
            value = self._encoded.sub("-~", value)
        return value

    def home_only(self, value: str) -> str:
        """``value`` with homes replaced by ``~`` but the workspace left absolute."""
        if "/" not in value and "\\" not in value:
            return value
        value = _without_homes(_ANSI.sub("", value) if "\x1b" in value else value)
        return value if self._encoded is None else self._encoded.sub("-~", value)

    def value(self, value: Any, rewrite: Callable[[str], str] | None = None) -> Any:
        """Every string inside a JSON-like ``value`` rewritten (homes only by default)."""
        rewrite = rewrite or self.home_only
        if isinstance(value, str):
            return rewrite(value)
        if isinstance(value, list):
            return [self.value(item, rewrite) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item, rewrite) for key, item in value.items()}
        return value
