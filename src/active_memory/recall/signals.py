"""Signals: what a tool call touches, read from its arguments without touching the filesystem.

Native path fields come first (``file_path``, ``filePath``, ``path``, ``filename``, ``paths``,
``cwd``, ``workdir``), then shell arguments (``cd dir && …`` moves the base), Codex patch file
headers, and finally identifiers: maximal ``[A-Za-z0-9_]`` runs kept whole and also split on
``_`` and camelCase into lowercase topic words.

Paths resolve against the tool's working directory, then the workspace root; ``.``, ``..`` and
``\\`` are normalised lexically (symlinks are never followed at match time) and made
root-relative. A path outside the workspace is ignored. Work is bounded on huge inputs: at most
:data:`MAX_SCAN_CHARS` characters of argument text, :data:`MAX_SHELL_TOKENS` shell tokens,
:data:`MAX_PATHS` paths and :data:`MAX_IDENTIFIERS` identifiers per call.

Standard library and ``active_memory.lessons`` only: the hook helper's store fallback imports it.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from active_memory.lessons import BROAD_WORDS, LIMITS

__all__ = [
    "MAX_IDENTIFIERS",
    "MAX_PATHS",
    "MAX_SCAN_CHARS",
    "MAX_SHELL_TOKENS",
    "Signals",
    "ToolCall",
    "WorkspaceRoot",
    "extract_signals",
    "split_words",
]

MAX_SCAN_CHARS = 65_536
MAX_SHELL_TOKENS = 4_096
MAX_PATHS = 64
MAX_IDENTIFIERS = 2_048
_MAX_DEPTH = 4  # nesting of argument objects, and of `bash -c` scripts

# Native path fields, in priority order; directory fields also move the shell base.
PATH_FIELDS = ("file_path", "filePath", "path", "filename", "paths")
DIRECTORY_FIELDS = ("cwd", "workdir")
SHELL_FIELDS = ("command", "cmd", "script")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_CD = frozenset({"cd", "pushd"})
# Search tools whose first operand is a pattern, not a path (unless -e/-f gives the pattern).
_SEARCHES = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
_PATTERN_OPTIONS = ("-e", "-f", "--regexp", "--file")

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")
# camelCase, PascalCase and ACRONYMWord boundaries; digits stay with the letters before them.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_PATCH_HEADER = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.M)
_GLOB = re.compile(r"[*?\[{]")
_DRIVE = re.compile(r"[A-Za-z]:(?:/|$)")
_OPERATOR_CHARS = "();<>|&\n"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as a harness reports it: the tool, its arguments and its working directory."""

    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    cwd: str | None = None


@dataclass(frozen=True, slots=True)
class Signals:
    """What a call touches: root-relative paths (in discovery order), identifiers, topic words."""

    paths: tuple[str, ...] = ()
    identifiers: frozenset[str] = frozenset()
    words: frozenset[str] = frozenset()


def _normalise(path: str) -> str | None:
    """Lexically normalise an absolute path to ``/``-separated form, or None if it is relative."""
    text = path.replace("\\", "/")
    if text.startswith("/"):
        prefix, rest = "", text
    elif _DRIVE.match(text):
        prefix, rest = text[0].lower() + ":", text[2:]
    else:
        return None
    parts: list[str] = []
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return prefix + "/" + "/".join(parts)


def _join(base: str | None, path: str) -> str | None:
    text = path.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text):
        return _normalise(text)
    if base is None or text.startswith("~"):
        return None
    return _normalise(base + "/" + text)


@dataclass(frozen=True, slots=True)
class WorkspaceRoot:
    """The workspace as absolute normalised prefixes: the path given and its real path.

    The real path is computed once, here, so a harness reporting either spelling (``/tmp`` versus
    ``/private/tmp``) is understood while matching itself never touches the filesystem.
    """

    roots: tuple[str, ...]

    @classmethod
    def at(cls, workspace: str | os.PathLike[str]) -> WorkspaceRoot:
        given = os.path.abspath(os.fspath(workspace))
        spellings = []
        for candidate in (given, os.path.realpath(given)):
            normal = _normalise(candidate)
            if normal is not None and normal not in spellings:
                spellings.append(normal)
        return cls(tuple(spellings))

    @property
    def primary(self) -> str:
        return self.roots[0]

    def relative(self, absolute: str) -> str | None:
        """The root-relative form of a normalised absolute path; ``""`` for the root itself."""
        for root in self.roots:
            if absolute == root:
                return ""
            prefix = root if root.endswith("/") else root + "/"
            if absolute.startswith(prefix):
                return absolute[len(prefix) :]
        return None

    def resolve(self, path: str, base: str | None) -> str | None:
        """Root-relative form of ``path`` read from ``base`` then from the root; None if outside."""
        if not path or len(path) > 4 * LIMITS.path_bytes:
            return None
        for start in (base, self.primary):
            absolute = _join(start, path)
            if absolute is not None:
                relative = self.relative(absolute)
                if relative is not None:
                    return relative
        return None

    def directory(self, path: str | None, base: str | None) -> str | None:
        """An absolute base directory for later relative paths, or None when it is unknown."""
        if not path:
            return base
        return _join(base, path)


class _Collector:
    """Accumulates bounded, de-duplicated signals for one call."""

    def __init__(self, root: WorkspaceRoot) -> None:
        self.root = root
        self.paths: dict[str, None] = {}
        self.texts: list[str] = []
        self.budget = MAX_SCAN_CHARS

    def path(self, value: str, base: str | None) -> None:
        if len(self.paths) >= MAX_PATHS:
            return
        relative = self.root.resolve(value, base)
        if relative:
            self.paths.setdefault(relative, None)

    def text(self, value: str) -> str:
        """Record argument text for identifiers; returns the part that fits the scan budget."""
        if self.budget <= 0:
            return ""
        kept = value[: self.budget]
        self.budget -= len(kept)
        # The workspace's own location is not a topic of the call.
        plain = kept.replace("\\", "/")
        for root in self.root.roots:
            plain = plain.replace(root + "/", "")
        self.texts.append(plain)
        return kept


def _glob_prefix(word: str) -> str:
    """The literal directory in front of a glob (``src/app/*.py`` gives ``src/app``)."""
    match = _GLOB.search(word)
    if match is None:
        return word
    head = word[: match.start()]
    return head.rsplit("/", 1)[0] if "/" in head else ""


def _shell_tokens(script: str) -> Iterator[str]:
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    count = 0
    try:
        for token in lexer:
            count += 1
            if count > MAX_SHELL_TOKENS:
                return
            yield token
    except ValueError:
        return  # an unclosed quote: keep what was read before it


def _shell(collector: _Collector, script: str, base: str | None, depth: int) -> None:
    """Paths from a shell script: arguments, redirections, ``cd`` chains, ``bash -c`` bodies."""
    stack: list[str | None] = []
    words: list[str] = []
    in_comment = False

    def finish() -> None:
        nonlocal base
        base = _simple_command(collector, words, base, depth)
        words.clear()

    for token in _shell_tokens(script):
        if in_comment:
            if "\n" not in token:
                continue
            in_comment = False  # the newline ends the comment and the command
        if token and all(char in _OPERATOR_CHARS for char in token):
            if any(char in token for char in ";&|\n"):
                finish()
            if "(" in token:
                finish()
                stack.append(base)
            if ")" in token:
                finish()
                if stack:
                    base = stack.pop()
            continue
        if token.startswith("#"):
            in_comment = True
            continue
        words.append(token)
    finish()


def _simple_command(
    collector: _Collector, words: list[str], base: str | None, depth: int
) -> str | None:
    """Record one simple command's paths; returns the base directory after it ran."""
    index = 0
    while index < len(words) and "=" in words[index] and not words[index].startswith("-"):
        collector.path(words[index].split("=", 1)[1], base)  # FOO=path cmd …
        index += 1
    if index >= len(words):
        return base
    name, args = words[index], words[index + 1 :]
    if "/" in name:
        collector.path(name, base)
    command = name.rsplit("/", 1)[-1]
    if command in _CD:
        target = next((arg for arg in args if not arg.startswith("-")), None)
        if target is None or target.startswith("~") or target == "-":
            return None  # home or the previous directory: unknown from here on
        collector.path(target, base)
        return collector.root.directory(target, base)
    if command == "popd":
        return None
    if command in _SHELLS and depth < _MAX_DEPTH:
        for position, arg in enumerate(args[:-1]):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                _shell(collector, args[position + 1], base, depth + 1)
                return base
    if command in _SEARCHES and not any(arg.startswith(_PATTERN_OPTIONS) for arg in args):
        operands = [position for position, arg in enumerate(args) if not arg.startswith("-")]
        if operands:
            args = args[: operands[0]] + args[operands[0] + 1 :]
    for arg in args:
        if arg.startswith("-"):
            if arg.startswith("--") and "=" in arg:
                collector.path(_glob_prefix(arg.split("=", 1)[1]), base)
            continue
        collector.path(_glob_prefix(arg), base)
    return base


def _patch(collector: _Collector, text: str, base: str | None) -> None:
    for match in _PATCH_HEADER.finditer(text):
        collector.path(match.group(1), base)


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < _MAX_DEPTH and isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item, depth + 1)


def split_words(identifier: str) -> Iterator[str]:
    """Lowercase topic words of one identifier, split on ``_`` and camelCase."""
    for chunk in identifier.split("_"):
        for word in _WORD.findall(chunk):
            yield word.lower()


def _identifiers(texts: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    word_low, word_high = LIMITS.keyword_min_chars, LIMITS.keyword_max_chars
    runs: dict[str, None] = {}
    for text in texts:
        for run in _IDENTIFIER.findall(text):
            if len(runs) >= MAX_IDENTIFIERS:
                break
            runs.setdefault(run, None)
    identifiers = frozenset(run for run in runs if low <= len(run) <= high)
    words = {
        word
        for run in runs
        for word in split_words(run)
        if word_low <= len(word) <= word_high and word not in BROAD_WORDS
    }
    return identifiers, frozenset(words)


def _shell_text(value: Any) -> str | None:
    """The script of a shell field: a string, or an argv list such as ``["bash", "-lc", s]``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return shlex.join(value)
    return None


def extract_signals(call: ToolCall, root: WorkspaceRoot) -> Signals:
    """Turn one tool call into bounded signals; never raises on odd or hostile arguments."""
    collector = _Collector(root)
    arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
    base = root.directory(call.cwd, root.primary) if call.cwd else root.primary
    for name in DIRECTORY_FIELDS:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            collector.path(value, base)
            base = root.directory(value, base)
    for name in PATH_FIELDS:
        value = arguments.get(name)
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values[:MAX_PATHS]:
            if isinstance(item, str):
                collector.path(_glob_prefix(item), base)
    if isinstance(arguments.get("pattern"), str) and call.tool.lower() in ("glob", "find"):
        prefix = _glob_prefix(arguments["pattern"])
        if prefix:
            collector.path(prefix, base)
    for name in SHELL_FIELDS:
        script = _shell_text(arguments.get(name))
        if script is None:
            continue
        kept = collector.text(script)
        if "*** Begin Patch" in kept or "*** Update File:" in kept or "*** Add File:" in kept:
            _patch(collector, kept, base)
        if not kept.lstrip().startswith("*** Begin Patch"):
            _shell(collector, kept, base, 0)
    for name, value in arguments.items():
        if name in SHELL_FIELDS or name in PATH_FIELDS or name in DIRECTORY_FIELDS:
            continue
        for text in _strings(value, 1):
            collector.text(text)
    identifiers, words = _identifiers([*collector.paths, *collector.texts])
    return Signals(tuple(collector.paths), identifiers, words)
