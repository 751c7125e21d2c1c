"""Signals: what a tool call touches, read from its arguments without touching the filesystem.

Native path fields come first (``file_path``, ``filePath``, ``path``, ``filename``, ``paths``,
``cwd``, ``workdir``), then shell arguments (read by :mod:`active_memory.recall.shell`: ``cd dir
&& …`` moves the base, wrappers such as ``sudo`` are looked through, ``git -C dir`` is
honoured), Codex patch file headers, and finally identifiers: maximal ``[A-Za-z0-9_]`` runs
kept whole and also split on ``_`` and camelCase into lowercase topic words.

Paths resolve against the tool's working directory, then the workspace root; ``.``, ``..`` and
``\\`` are normalised lexically (symlinks are never followed at match time) and made
root-relative. A path outside the workspace is ignored, and so is every relative path read
after the call itself moved its base outside (``cd ../other && cat src/app.py``): only the
harness's own working directory falls back to the root. Work is bounded on huge inputs: at most
:data:`MAX_SCAN_CHARS` characters of argument text, :data:`MAX_SHELL_TOKENS` shell tokens,
:data:`MAX_PATHS` paths and :data:`MAX_IDENTIFIERS` identifiers per call.

Standard library and ``active_memory.limits`` only, and no ``dataclasses`` or ``typing`` at run
time: the hook helper's store fallback imports it on every tool call, where those imports alone
would cost more than the matching. For the same reason identifiers are found without ``re``
(which loads ``enum`` and more, as much again as the rest of a call): a call without a shell
command or a patch never loads it (:mod:`active_memory.recall.shell` does, for a command; that
module itself is imported only for a command, about 0.3 ms a call saved).
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc's, without collections (1.5 ms a call)

from active_memory.limits import BROAD_WORDS, LIMITS
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence
    from typing import Any

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
MAX_PATHS = 64
MAX_IDENTIFIERS = 2_048
MAX_SHELL_TOKENS = 4_096  # read by recall/shell.py, imported only for a command
_MAX_DEPTH = 4  # nesting of argument objects

# Native path fields, in priority order; directory fields also move the shell base.
PATH_FIELDS = ("file_path", "filePath", "path", "filename", "paths")
DIRECTORY_FIELDS = ("cwd", "workdir")
SHELL_FIELDS = ("command", "cmd", "script")

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_IDENTIFIER_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# Every byte that cannot be part of an identifier run becomes a space: the runs ([A-Za-z0-9_]+,
# UTF-8 of any other character included) then split apart in C.
_RUN_SEPARATORS = bytes(byte if byte in _IDENTIFIER_BYTES else 0x20 for byte in range(256))
# Compiled on first use (re keeps it): only a Codex patch needs it.
_PATCH_HEADER = r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$"
_KNOWN_FIELDS = frozenset((*PATH_FIELDS, *DIRECTORY_FIELDS, *SHELL_FIELDS))
_PATH_FIELD_NAMES = frozenset(PATH_FIELDS)
_SCALARS = frozenset((int, float, bool))
_GLOB = "*?[{$`"  # what starts a glob or an expansion
_GLOB_CHARS = frozenset(_GLOB)
# The topic words of each identifier run seen in this process: a session's calls name the same
# folders, files and identifiers again and again (an in-process recall serves thousands of
# calls; splitting a run costs more than the rest of a plain path call). Dropped whole when full.
_RUN_WORDS: dict[str, tuple[str, ...]] = {}
# The same for the ``_``-separated chunks of runs: a run seen for the first time (a file named
# by a number) is mostly chunks seen before.
_CHUNK_WORDS: dict[str, tuple[str, ...]] = {}
_RUN_WORDS_KEPT = 16_384
_WORKING_KEPT = 256


class ToolCall:
    """One tool call as a harness reports it: the tool, its arguments and its working directory.

    A plain value (treat it as frozen), like every type on the hook path: see the module note.
    """

    __slots__ = ("arguments", "cwd", "tool")

    def __init__(
        self, tool: str, arguments: Mapping[str, Any] | None = None, cwd: str | None = None
    ) -> None:
        self.tool = tool
        self.arguments: Mapping[str, Any] = {} if arguments is None else arguments
        self.cwd = cwd

    def __repr__(self) -> str:
        return f"ToolCall({self.tool!r}, {self.arguments!r}, {self.cwd!r})"


class Signals:
    """What a call touches: root-relative paths (in discovery order), identifiers, topic words."""

    __slots__ = ("identifiers", "paths", "words")

    def __init__(
        self,
        paths: tuple[str, ...] = (),
        identifiers: frozenset[str] = frozenset(),
        words: frozenset[str] = frozenset(),
    ) -> None:
        self.paths = paths
        self.identifiers = identifiers
        self.words = words

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Signals):
            return NotImplemented
        return (self.paths, self.identifiers, self.words) == (
            other.paths, other.identifiers, other.words)  # fmt: skip

    def __repr__(self) -> str:
        return f"Signals({self.paths!r}, {set(self.identifiers)!r}, {set(self.words)!r})"


def _has_drive(text: str) -> bool:
    """Whether ``text`` starts with a drive, ``c:`` alone or before ``/`` (``[A-Za-z]:(/|$)``)."""
    return len(text) > 1 and text[1] == ":" and text[0] in _LETTERS and text[2:3] in ("", "/")


def _normalise(path: str) -> str | None:
    """Lexically normalise an absolute path to ``/``-separated form, or None if it is relative."""
    text = path.replace("\\", "/")
    if text.startswith("/"):
        if "//" not in text and "/." not in text and not text.endswith("/"):
            return text  # already normal: no empty, "." or ".." part, no trailing "/"
        prefix, rest = "", text
    elif _has_drive(text):
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
    if text.startswith("/") or _has_drive(text):
        return _normalise(text)
    if base is None or text.startswith("~"):
        return None
    parts = text.split("/")
    if "" not in parts and "." not in parts and ".." not in parts:
        # A plain relative path after a normalised base (every base is one) is normalised.
        return base + text if base.endswith("/") else base + "/" + text
    return _normalise(base + "/" + text)


class WorkspaceRoot:
    """The workspace as absolute normalised prefixes: the path given and its real path.

    The real path is computed once, here, so a harness reporting either spelling (``/tmp`` versus
    ``/private/tmp``) is understood while matching itself never touches the filesystem.
    """

    __slots__ = ("_prefixes", "_working", "roots")

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots
        # Each root with what a path under it starts with (the root itself when it ends in "/").
        self._prefixes = tuple((root, root if root.endswith("/") else root + "/") for root in roots)
        # The working directory a harness reports, as a base: the same one on nearly every call
        # of a session, so it is joined and normalised once (bounded; dropped whole when full).
        self._working: dict[str, str | None] = {}

    def __repr__(self) -> str:
        return f"WorkspaceRoot({self.roots!r})"

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
        for root, prefix in self._prefixes:
            if absolute == root:
                return ""
            if absolute.startswith(prefix):
                return absolute[len(prefix) :]
        return None

    def resolve(self, path: str, base: str | None, *, fallback: bool = True) -> str | None:
        """Root-relative form of ``path`` read from ``base``, then (``fallback``) from the root.

        None when it is outside the workspace from every start.
        """
        if not path or len(path) > 4 * LIMITS.path_bytes:
            return None
        for start in (base, self.primary) if fallback else (base,):
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

    def working(self, cwd: str | None) -> str | None:
        """The base a call's working directory ``cwd`` gives (the root when there is none)."""
        if not cwd:
            return self.primary
        if cwd in self._working:
            return self._working[cwd]
        base = _join(self.primary, cwd)
        if len(self._working) >= _WORKING_KEPT:
            self._working.clear()
        self._working[cwd] = base
        return base


class _Collector:
    """Accumulates bounded, de-duplicated signals for one call."""

    def __init__(self, root: WorkspaceRoot, anchor: str | None) -> None:
        self.root = root
        self.anchor = anchor  # the harness's working directory: only it falls back to the root
        self.paths: dict[str, None] = {}
        self.texts: list[str] = []
        self.budget = MAX_SCAN_CHARS

    def path(self, value: str, base: str | None) -> None:
        if len(self.paths) >= MAX_PATHS:
            return
        fallback = base is None or base == self.anchor
        relative = self.root.resolve(value, base, fallback=fallback)
        if relative:
            self.paths.setdefault(relative, None)

    def directory(self, value: str | None, base: str | None) -> str | None:
        return self.root.directory(value, base)

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


def _patch(collector: _Collector, text: str, base: str | None) -> None:
    import re  # only for a patch: see the module note

    for match in re.finditer(_PATCH_HEADER, text, re.MULTILINE):
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


def _camel_words(chunk: str) -> Iterator[str]:
    """The words ``[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+`` finds, found
    without ``re`` (a test holds the two equal): acronyms apart (``HTTPServer``: ``HTTP``,
    ``Server``), digits kept with the letters before them."""
    end, start = len(chunk), 0
    while start < end:
        position, char = start, chunk[start]
        if "A" <= char <= "Z":
            while position < end and "A" <= chunk[position] <= "Z":
                position += 1
            if position < end and "a" <= chunk[position] <= "z":
                if position - start > 1:  # an acronym, then a capitalised word
                    yield chunk[start : position - 1]
                    start = position - 1
                    continue
                while position < end and "a" <= chunk[position] <= "z":
                    position += 1
        elif "a" <= char <= "z":
            while position < end and "a" <= chunk[position] <= "z":
                position += 1
        elif not "0" <= char <= "9":
            start += 1  # no word starts here
            continue
        while position < end and "0" <= chunk[position] <= "9":
            position += 1
        yield chunk[start:position]
        start = position


def split_words(identifier: str) -> Iterator[str]:
    """Lowercase topic words of one identifier, split on ``_`` and camelCase."""
    for chunk in identifier.split("_"):
        if chunk.isascii() and (chunk.isdigit() or (chunk.islower() and chunk.isalpha())):
            yield chunk  # one word, as _camel_words would find it
            continue
        for word in _camel_words(chunk):
            yield word.lower()


def _chunk_words(chunk: str) -> tuple[str, ...]:
    """The kept topic words of one ``_``-separated chunk of a run (see :func:`split_words`)."""
    words = _CHUNK_WORDS.get(chunk)
    if words is None:
        low, high = LIMITS.keyword_min_chars, LIMITS.keyword_max_chars
        if chunk.isascii() and (chunk.isdigit() or (chunk.islower() and chunk.isalpha())):
            # One word, as split_words finds it (a number names many files: it is new often).
            kept = low <= len(chunk) <= high and chunk not in BROAD_WORDS
            words = (chunk,) if kept else ()
        else:
            words = tuple(word for word in split_words(chunk)
                          if low <= len(word) <= high and word not in BROAD_WORDS)  # fmt: skip
        if len(_CHUNK_WORDS) >= _RUN_WORDS_KEPT:
            _CHUNK_WORDS.clear()
        _CHUNK_WORDS[chunk] = words
    return words


def _run_words(run: str) -> tuple[str, ...]:
    """The topic words of one identifier run that are kept: their length in bounds, not broad."""
    words = _RUN_WORDS.get(run)
    if words is None:
        if "_" in run:
            # A new run is mostly known chunks (``export_4711``: ``export`` and ``4711``).
            words = ()
            for chunk in run.split("_"):
                words += _chunk_words(chunk)
        else:
            words = _chunk_words(run)
        if len(_RUN_WORDS) >= _RUN_WORDS_KEPT:
            _RUN_WORDS.clear()
        _RUN_WORDS[run] = words
    return words


def _identifiers(texts: Sequence[str]) -> tuple[frozenset[str], frozenset[str]]:
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    runs: Collection[str] = ()
    if len(texts) == 1:
        # Every byte outside a run became a space, so the translated text is ASCII.
        found = texts[0].encode("utf-8", "surrogatepass").translate(_RUN_SEPARATORS)
        runs = found.decode("ascii").split()  # a run twice adds nothing to the sets below
    if len(texts) != 1 or len(runs) > MAX_IDENTIFIERS:
        kept: dict[str, None] = {}
        for text in texts:
            found = text.encode("utf-8", "surrogatepass").translate(_RUN_SEPARATORS)
            for run in found.decode("ascii").split():
                if len(kept) >= MAX_IDENTIFIERS:
                    break
                kept[run] = None  # a run seen before keeps its first place
        runs = kept
    identifiers = []
    words: set[str] = set()
    known = _RUN_WORDS
    for run in runs:
        if low <= len(run) <= high:
            identifiers.append(run)
        cached = known.get(run)
        words.update(_run_words(run) if cached is None else cached)
    return frozenset(identifiers), frozenset(words)


def _shell_text(value: Any) -> str | None:
    """The script of a shell field: a string, or an argv list such as ``["bash", "-lc", s]``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        import shlex  # only for an argv list: see the module note

        return shlex.join(value)
    return None


def glob_prefix(word: str) -> str:
    """The literal directory in front of a glob or variable (``src/app/*.py`` gives ``src/app``)."""
    if _GLOB_CHARS.isdisjoint(word):  # the usual plain path, without a scan per character
        return word
    cut = min((index for index in map(word.find, _GLOB) if index >= 0), default=-1)
    if cut < 0:
        return word
    head = word[:cut]
    return head.rsplit("/", 1)[0] if "/" in head else ""


def _single_path(arguments: Mapping[str, Any]) -> str | None:
    """The one path of arguments that hold nothing else signals are read from (a ``Read`` of
    one file, its offset and limit), else None. Values that are neither text nor containers
    (numbers, booleans, None) give no signal under any name."""
    found = None
    for name, value in arguments.items():
        if type(value) is str:
            if found is not None or name not in _PATH_FIELD_NAMES:
                return None
            found = value
        elif value is not None and type(value) not in _SCALARS:
            return None
    return found


def extract_signals(call: ToolCall, root: WorkspaceRoot) -> Signals:
    """Turn one tool call into bounded signals; never raises on odd or hostile arguments."""
    arguments = call.arguments
    if type(arguments) is not dict and not isinstance(arguments, Mapping):
        arguments = {}
    base = root.working(call.cwd)
    single = _single_path(arguments)
    if single is not None:
        # The usual call, what the loops below make of it: one path read from the harness's
        # working directory (so falling back to the root), its runs the only text.
        relative = root.resolve(glob_prefix(single), base)
        paths = (relative,) if relative else ()
        identifiers, words = _identifiers(paths)
        return Signals(paths, identifiers, words)
    collector = _Collector(root, base)
    for name in DIRECTORY_FIELDS:
        value = arguments.get(name)
        if isinstance(value, str) and value:
            collector.path(value, base)
            base = root.directory(value, base)
    for name in PATH_FIELDS:
        value = arguments.get(name)
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values[:MAX_PATHS]:
            if isinstance(item, str):
                collector.path(glob_prefix(item), base)
    if isinstance(arguments.get("pattern"), str) and call.tool.lower() in ("glob", "find"):
        prefix = glob_prefix(arguments["pattern"])
        if prefix:
            collector.path(prefix, base)
    for name in SHELL_FIELDS:
        value = arguments.get(name)
        script = None if value is None else _shell_text(value)
        if script is None:
            continue
        kept = collector.text(script)
        if "*** Begin Patch" in kept or "*** Update File:" in kept or "*** Add File:" in kept:
            _patch(collector, kept, base)
        if not kept.lstrip().startswith("*** Begin Patch"):
            from active_memory.recall.shell import read_shell  # a command only: module note

            read_shell(collector, kept, base)
    for name, value in arguments.items():
        if name in _KNOWN_FIELDS:
            continue
        for text in _strings(value, 1):
            collector.text(text)
    identifiers, words = _identifiers([*collector.paths, *collector.texts])
    return Signals(tuple(collector.paths), identifiers, words)
