"""Read-only investigation tools for specialists: read a file, list a folder, search text.

Every path is confined to one of the named roots (the checkout, the private evidence folder):
``..`` is refused outright, and the resolved path (symlinks followed) must stay inside its root.
Outputs are bounded in bytes, matches and entries. A bad call never raises: the problem goes
back to the model as an error result, so it can correct itself. Files are data, never
instructions; nothing here writes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.agents.providers.base import ToolCall, ToolSpec
from active_memory.errors import ConfigError

__all__ = ["ToolOutcome", "Toolbox"]

_ROOT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_BINARY_PROBE = 8192
_MAX_SEARCH_FILE = 2 * 1024 * 1024
_MAX_SEARCH_FILES = 20_000
_MAX_SEARCH_BYTES = 64 * 1024 * 1024
_MATCH_LINE_CHARS = 300
_MAX_READ_LINES = 5000
_SKIPPED_DIRS = frozenset({".git"})


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False


class _Refused(Exception):
    """A call the model must correct; its message becomes the error result."""


def _bounded(text: str, limit: int, hint: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    cut = data[:limit].decode("utf-8", errors="ignore")
    return f"{cut}\n[truncated at {limit} bytes; {hint}]"


def _is_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\0" in handle.read(_BINARY_PROBE)


def _nullable(kind: str, description: str) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description}


class Toolbox:
    """The tools over named roots, e.g. ``{"checkout": path, "evidence": path}``."""

    def __init__(
        self,
        roots: Mapping[str, str | Path],
        *,
        max_output_bytes: int = 32 * 1024,
        max_entries: int = 500,
        max_matches: int = 100,
        default_lines: int = 400,
    ) -> None:
        if not roots:
            raise ConfigError("toolbox.roots", "name at least one root folder")
        self._roots: dict[str, Path] = {}
        for name, folder in roots.items():
            if not _ROOT_NAME.match(name):
                raise ConfigError("toolbox.roots", f"{name!r} must match {_ROOT_NAME.pattern}")
            resolved = Path(folder).resolve()
            if not resolved.is_dir():
                raise ConfigError(f"toolbox.roots.{name}", f"{str(folder)!r} is not a folder")
            self._roots[name] = resolved
        self.max_output_bytes = max_output_bytes
        self.max_entries = max_entries
        self.max_matches = max_matches
        self.default_lines = default_lines
        self._specs = self._build_specs()
        self._validators = {
            spec.name: Draft202012Validator(dict(spec.parameters)) for spec in self._specs
        }

    def _build_specs(self) -> tuple[ToolSpec, ...]:
        root = {
            "type": "string",
            "enum": sorted(self._roots),
            "description": "Which root folder the path is in.",
        }
        path = {"type": "string", "description": "Path relative to the root ('' for the root)."}

        def schema(properties: dict[str, Any]) -> dict[str, Any]:
            # Strict for both APIs: every property required, optional ones nullable.
            return {
                "type": "object",
                "properties": properties,
                "required": sorted(properties),
                "additionalProperties": False,
            }

        return (
            ToolSpec(
                "read_file",
                "Read a text file, a window of lines at a time.",
                schema(
                    {
                        "root": root,
                        "path": path,
                        "offset": _nullable("integer", "First line to read, from 1 (default 1)."),
                        "limit": _nullable(
                            "integer", f"How many lines (default {self.default_lines})."
                        ),
                    }
                ),
            ),
            ToolSpec(
                "list_folder",
                "List a folder: sub-folders end with '/', files show their size.",
                schema({"root": root, "path": path}),
            ),
            ToolSpec(
                "search_text",
                "Find lines containing a text (or matching a Python regex) under a folder.",
                schema(
                    {
                        "root": root,
                        "pattern": {"type": "string", "description": "Text or regex to find."},
                        "path": _nullable("string", "Folder or file to search (default: root)."),
                        "regex": {"type": "boolean", "description": "Treat pattern as a regex."},
                        "max_matches": _nullable(
                            "integer", f"Stop after this many matches (at most {self.max_matches})."
                        ),
                    }
                ),
            ),
        )

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    async def run(self, call: ToolCall, *, deadline: float | None = None) -> ToolOutcome:
        """Run one call; every problem comes back as an error outcome, never an exception."""
        validator = self._validators.get(call.name)
        if validator is None:
            known = ", ".join(spec.name for spec in self._specs)
            return ToolOutcome(f"unknown tool {call.name!r}; the tools are {known}", True)
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as e:
            return ToolOutcome(f"arguments are not valid JSON: {e}", True)
        errors = sorted(validator.iter_errors(arguments), key=lambda error: list(error.path))
        if errors:
            return ToolOutcome(f"invalid arguments: {errors[0].message}", True)
        try:
            text = await asyncio.to_thread(self._dispatch, call.name, arguments, deadline)
        except _Refused as e:
            return ToolOutcome(str(e), True)
        except OSError as e:
            return ToolOutcome(f"cannot read: {e.strerror or e}", True)
        return ToolOutcome(text)

    def _dispatch(self, name: str, arguments: dict[str, Any], deadline: float | None) -> str:
        if name == "read_file":
            return self._read_file(arguments)
        if name == "list_folder":
            return self._list_folder(arguments)
        return self._search_text(arguments, deadline)

    def resolve(self, root_name: str, relative: str) -> Path:
        """The real path for ``relative`` inside a root; refuses anything that leaves it."""
        root = self._roots.get(root_name)
        if root is None:
            raise _Refused(f"unknown root {root_name!r}; use one of {sorted(self._roots)}")
        if "\0" in relative:
            raise _Refused("the path contains a NUL character")
        pure = PurePosixPath(relative or ".")
        if ".." in pure.parts:
            raise _Refused(f"{relative!r} is refused: '..' may not appear in a path")
        candidate = Path(pure) if pure.is_absolute() else root / pure
        resolved = candidate.resolve()
        if not resolved.is_relative_to(root):
            raise _Refused(f"{relative!r} is refused: it lies outside the {root_name} root")
        return resolved

    def _display(self, root_name: str, path: Path) -> str:
        relative = path.relative_to(self._roots[root_name]).as_posix()
        return f"{root_name}:{relative if relative != '.' else ''}"

    def _read_file(self, arguments: dict[str, Any]) -> str:
        path = self.resolve(arguments["root"], arguments["path"])
        if not path.is_file():
            raise _Refused(f"{arguments['path']!r} is not a file in {arguments['root']}")
        if _is_binary(path):
            raise _Refused(f"{arguments['path']!r} is a binary file")
        offset = max(1, arguments["offset"] or 1)
        limit = min(max(1, arguments["limit"] or self.default_lines), _MAX_READ_LINES)
        lines: list[str] = []
        used = 0
        more = False
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if number < offset:
                    continue
                # Stop on whole lines near the byte bound, so the next window starts cleanly.
                if len(lines) == limit or used >= self.max_output_bytes:
                    more = True
                    break
                lines.append(line)
                used += len(line.encode("utf-8"))
        shown = self._display(arguments["root"], path)
        if not lines:
            return f"{shown}: no lines from line {offset} (the file is shorter)"
        end = offset + len(lines) - 1
        tail = f"; more follows, continue with offset={end + 1}" if more else "; end of file"
        body = "".join(lines)
        header = f"{shown} lines {offset}-{end}{tail}\n"
        return header + _bounded(body, self.max_output_bytes, "read a smaller window with limit")

    def _list_folder(self, arguments: dict[str, Any]) -> str:
        folder = self.resolve(arguments["root"], arguments["path"])
        if not folder.is_dir():
            raise _Refused(f"{arguments['path']!r} is not a folder in {arguments['root']}")
        entries = sorted(folder.iterdir(), key=lambda entry: entry.name)
        shown: list[str] = []
        for entry in entries[: self.max_entries]:
            if entry.is_symlink():
                shown.append(f"{entry.name} -> (link)")
            elif entry.is_dir():
                shown.append(f"{entry.name}/")
            else:
                shown.append(f"{entry.name} ({entry.stat().st_size} bytes)")
        if len(entries) > self.max_entries:
            shown.append(f"[+{len(entries) - self.max_entries} more entries not shown]")
        header = f"{self._display(arguments['root'], folder)} ({len(entries)} entries)\n"
        listing = "\n".join(shown) if shown else "(empty)"
        return header + _bounded(listing, self.max_output_bytes, "list a sub-folder")

    def _search_text(self, arguments: dict[str, Any], deadline: float | None) -> str:
        root_name = arguments["root"]
        start = self.resolve(root_name, arguments["path"] or "")
        pattern: str = arguments["pattern"]
        if not pattern:
            raise _Refused("the pattern is empty")
        if arguments["regex"]:
            try:
                compiled = re.compile(pattern)
            except re.error as e:
                raise _Refused(f"the regex {pattern!r} does not compile: {e}") from e
        else:
            compiled = re.compile(re.escape(pattern))
        wanted = min(max(1, arguments["max_matches"] or 50), self.max_matches)
        matches: list[str] = []
        stopped = ""
        scanned_files = scanned_bytes = 0
        for path in self._walk(root_name, start):
            if deadline is not None and time.monotonic() >= deadline:
                stopped = "the session deadline"
                break
            if scanned_files >= _MAX_SEARCH_FILES or scanned_bytes >= _MAX_SEARCH_BYTES:
                stopped = "the scan limit"
                break
            size = path.stat().st_size
            if size > _MAX_SEARCH_FILE or _is_binary(path):
                continue
            scanned_files += 1
            scanned_bytes += size
            shown = self._display(root_name, path)
            with path.open(encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if compiled.search(line[:4096]):
                        text = line.rstrip("\n")[:_MATCH_LINE_CHARS]
                        matches.append(f"{shown}:{number}: {text}")
                        if len(matches) >= wanted:
                            break
            if len(matches) >= wanted:
                stopped = f"{wanted} matches"
                break
        summary = f"{len(matches)} match(es) in {scanned_files} file(s)"
        if stopped:
            summary += f"; stopped at {stopped}"
        body = "\n".join(matches) if matches else "(no matches)"
        return f"{summary}\n" + _bounded(body, self.max_output_bytes, "narrow the search")

    def _walk(self, root_name: str, start: Path) -> list[Path]:
        """Files under ``start`` in a stable order, skipping .git and links that leave the root."""
        root = self._roots[root_name]
        if start.is_file():
            return [start]
        found: list[Path] = []
        for folder, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
            for name in sorted(files):
                path = Path(folder) / name
                if path.is_symlink():
                    target = path.resolve()
                    if not target.is_relative_to(root) or not target.is_file():
                        continue
                found.append(path)
                if len(found) > _MAX_SEARCH_FILES:
                    return found
        return found
