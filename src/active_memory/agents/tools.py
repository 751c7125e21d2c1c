"""Read-only investigation tools for specialists: read a file, list a folder, search text, and
(with an ``evidence`` root) read a complete transcript the budget cut (:mod:`.tools_transcripts`).

Every path is confined to one of the named roots (the checkout, the private evidence folder):
``..`` is refused outright, the resolved path (symlinks followed) must stay inside its root, and
git internals (any ``.git`` component) are refused: they hold remotes with credentials, not
evidence. Outputs are bounded in bytes, matches and entries, and every output passes through
``redact_text`` before the model sees it. A bad call never raises: the problem goes back to the
model as an error result, so it can correct itself. Files are data, never instructions; nothing
here writes.
"""

from __future__ import annotations

import heapq
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.agents.providers.base import ToolCall, ToolSpec
from active_memory.agents.tools_files import (
    Refused,
    bounded,
    is_binary,
    is_git_internal,
    read_window as _read_window,
)
from active_memory.agents.tools_search import compile_pattern, search_files, walk
from active_memory.agents.tools_transcripts import MAX_RECORDS, read_transcript
from active_memory.daemon_threads import in_daemon_thread
from active_memory.errors import ConfigError
from active_memory.evidence.redact import redact_text

__all__ = ["ToolOutcome", "Toolbox"]

EVIDENCE_ROOT = "evidence"
_ROOT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_MAX_READ_LINES = 5000
# Headers and cut markers come on top of a tool's byte budget for its body.
_HEADER_ALLOWANCE = 512
_ERROR_BYTES = 2048  # an error outcome, whatever the arguments it quotes


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False


def _nullable(kind: str, description: str) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description}


class Toolbox:
    """The tools over named roots, e.g. ``{"repository": path, "evidence": path}``.

    Every output names a file as ``root:relative/path`` (a line number, when shown, follows
    the word ``line``): for the ``repository`` root that is exactly the reference to cite.

    ``max_match_seconds`` caps one regex match (one line); a nearer deadline lowers it.
    """

    def __init__(
        self,
        roots: Mapping[str, str | Path],
        *,
        max_output_bytes: int = 32 * 1024,
        max_entries: int = 500,
        max_matches: int = 100,
        default_lines: int = 400,
        max_match_seconds: float = 2.0,
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
        if max_match_seconds <= 0:
            raise ConfigError("toolbox.max_match_seconds", f"{max_match_seconds!r} must be > 0")
        self.max_match_seconds = max_match_seconds
        # Files each root's tools showed the model (read, or matched by a search): admission
        # refuses a citation of a checkout file the specialist never read.
        self._seen: dict[str, set[str]] = {name: set() for name in self._roots}
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
            *self._transcript_specs(schema),
        )

    def _transcript_specs(self, schema: Any) -> tuple[ToolSpec, ...]:
        if EVIDENCE_ROOT not in self._roots:
            return ()
        return (
            ToolSpec(
                "read_transcript",
                "Read the complete transcript of an execution whose excerpt the budget cut, "
                "a page of records at a time.",
                schema(
                    {
                        "execution": {
                            "type": "string",
                            "description": "The execution's ref, as in the payload (exec:...).",
                        },
                        "from_record": _nullable(
                            "integer", "First record number (an excerpt's n) to read (default 1)."
                        ),
                        "max_records": _nullable(
                            "integer", f"How many records (default 50, at most {MAX_RECORDS})."
                        ),
                        "text_offset": _nullable(
                            "integer", "Where in the first record's text to start (default 0)."
                        ),
                    }
                ),
            ),
        )

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._specs

    async def run(self, call: ToolCall, *, deadline: float | None = None) -> ToolOutcome:
        """Run one call; every problem comes back as an error outcome, never an exception."""
        outcome = await self._run(call, deadline)
        content = outcome.content
        if outcome.is_error:
            # An error may quote the model's arguments, which the model can make any length.
            content = bounded(content, _ERROR_BYTES, "shorten the arguments")
        # Errors too: they quote the model's arguments and the system's messages.
        return ToolOutcome(redact_text(content), outcome.is_error)

    async def _run(self, call: ToolCall, deadline: float | None) -> ToolOutcome:
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
        # JSON Schema's "integer" admits 2.0; the tools index and slice with these numbers.
        arguments = {key: int(value) if isinstance(value, float) and value.is_integer() else value
                     for key, value in arguments.items()}  # fmt: skip
        try:
            # A daemon thread: a call stuck in the file system cannot keep the process alive
            # past its deadline (see daemon_threads).
            text = await in_daemon_thread(self._dispatch, call.name, arguments, deadline)
        except Refused as e:
            return ToolOutcome(str(e), True)
        except OSError as e:
            return ToolOutcome(f"cannot read: {e.strerror or e}", True)
        except (TypeError, ValueError, KeyError) as e:
            # Arguments the schema let through but a tool cannot use: the model's to fix, and
            # never an end to its session.
            return ToolOutcome(f"invalid arguments for {call.name!r}: {e}", True)
        return ToolOutcome(text)

    def _dispatch(self, name: str, arguments: dict[str, Any], deadline: float | None) -> str:
        if name == "read_file":
            text, hint = self._read_file(arguments, deadline), "read a smaller window with limit"
        elif name == "read_transcript":
            text = read_transcript(self._roots[EVIDENCE_ROOT], arguments, self.max_output_bytes)
            hint = "read fewer records with max_records"
        elif name == "list_folder":
            text, hint = self._list_folder(arguments), "list a sub-folder"
        else:
            text, hint = self._search_text(arguments, deadline), "narrow the search"
        # Redacted before the cut, so a cut never leaves the head of a credential unrecognised.
        return bounded(redact_text(text), self.max_output_bytes + _HEADER_ALLOWANCE, hint)

    def resolve(self, root_name: str, relative: str) -> Path:
        """The real path for ``relative`` inside a root; refuses anything that leaves it."""
        root = self._roots.get(root_name)
        if root is None:
            raise Refused(f"unknown root {root_name!r}; use one of {sorted(self._roots)}")
        if "\0" in relative:
            raise Refused("the path contains a NUL character")
        pure = PurePosixPath(relative or ".")
        if ".." in pure.parts:
            raise Refused(f"{relative!r} is refused: '..' may not appear in a path")
        candidate = Path(pure) if pure.is_absolute() else root / pure
        resolved = candidate.resolve()
        if not resolved.is_relative_to(root):
            raise Refused(f"{relative!r} is refused: it lies outside the {root_name} root")
        if is_git_internal(pure.parts) or is_git_internal(resolved.relative_to(root).parts):
            raise Refused(f"{relative!r} is refused: git internals (.git) are not evidence")
        return resolved

    def seen(self, root_name: str) -> frozenset[str] | None:
        """Root-relative paths of the files of ``root_name`` the tools showed (read, or matched
        by a search); None when there is no such root."""
        if root_name not in self._roots:
            return None
        return frozenset(self._seen[root_name])

    def _note_seen(self, root_name: str, path: Path) -> None:
        self._seen[root_name].add(path.relative_to(self._roots[root_name]).as_posix())

    def _display(self, root_name: str, path: Path) -> str:
        relative = path.relative_to(self._roots[root_name]).as_posix()
        return f"{root_name}:{relative if relative != '.' else ''}"

    def _read_file(self, arguments: dict[str, Any], deadline: float | None) -> str:
        path = self.resolve(arguments["root"], arguments["path"])
        if not path.is_file():
            raise Refused(f"{arguments['path']!r} is not a file in {arguments['root']}")
        if is_binary(path):
            raise Refused(f"{arguments['path']!r} is a binary file")
        shown = _read_window(
            path,
            self._display(arguments["root"], path),
            offset=max(1, arguments["offset"] or 1),
            limit=min(max(1, arguments["limit"] or self.default_lines), _MAX_READ_LINES),
            max_bytes=self.max_output_bytes,
            deadline=deadline,
        )
        self._note_seen(arguments["root"], path)
        return shown

    def _list_folder(self, arguments: dict[str, Any]) -> str:
        folder = self.resolve(arguments["root"], arguments["path"])
        if not folder.is_dir():
            raise Refused(f"{arguments['path']!r} is not a folder in {arguments['root']}")
        # A folder may hold millions of entries: count them all, but keep only the first
        # max_entries names (heapq.nsmallest holds a bounded heap) instead of sorting them all.
        counted = [0]

        def visible_names() -> Iterator[str]:
            with os.scandir(folder) as scan:
                for item in scan:
                    if not is_git_internal((item.name,)):
                        counted[0] += 1
                        yield item.name

        first = heapq.nsmallest(self.max_entries, visible_names())
        total = counted[0]
        entries = [folder / name for name in first]
        shown: list[str] = []
        for entry in entries:
            if entry.is_symlink():
                shown.append(f"{entry.name} -> (link)")
            elif entry.is_dir():
                shown.append(f"{entry.name}/")
            else:
                shown.append(f"{entry.name} ({entry.stat().st_size} bytes)")
        if total > self.max_entries:
            shown.append(f"[+{total - self.max_entries} more entries not shown]")
        header = f"{self._display(arguments['root'], folder)} ({total} entries)\n"
        listing = "\n".join(shown) if shown else "(empty)"
        return header + listing

    def _search_text(self, arguments: dict[str, Any], deadline: float | None) -> str:
        root_name = arguments["root"]
        start = self.resolve(root_name, arguments["path"] or "")
        pattern = compile_pattern(arguments["pattern"], is_regex=arguments["regex"])
        wanted = min(max(1, arguments["max_matches"] or 50), self.max_matches)
        found: set[Path] = set()
        try:
            return search_files(
                walk(self._roots[root_name], start),
                lambda path: self._display(root_name, path),
                pattern,
                wanted=wanted,
                deadline=deadline,
                match_seconds=self.max_match_seconds,
                found=found,
            )
        finally:
            for path in found:
                self._note_seen(root_name, path)
