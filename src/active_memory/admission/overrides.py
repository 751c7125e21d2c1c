"""Author overrides: a folder whose files replace shipped prompts or contracts by file name.

A prompt author edits a copy of ``graph_discovery.md`` or ``graph_discovery.schema.json`` in a
folder of their own instead of the installed package. The folder is active for the duration of a
:func:`using_overrides` block (a context variable, so concurrent sessions of one postmortem and
the tasks they start all see the same files); a shipped file the folder does not hold is used as
shipped. A file the folder holds under a name that replaces nothing is refused, so a typo in a
file name cannot silently leave the shipped file in force.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import ConfigError

__all__ = [
    "MAX_OVERRIDE_BYTES",
    "Overrides",
    "active_overrides",
    "check_folder",
    "override_file",
    "read_override",
    "using_overrides",
]

# A prompt or a contract is a few KiB; anything far beyond is not one.
MAX_OVERRIDE_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Overrides:
    """The author's folders (None: the shipped files) for prompts (``NAME.md``) and contracts
    (``NAME.schema.json``)."""

    prompts: Path | None = None
    contracts: Path | None = None


_SHIPPED = Overrides()
_ACTIVE: ContextVar[Overrides | None] = ContextVar("active_memory_overrides", default=None)


def active_overrides() -> Overrides:
    return _ACTIVE.get() or _SHIPPED


def check_folder(kind: str, folder: Path, suffix: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """The names ``folder`` overrides; ConfigError for a missing folder or an unknown file."""
    if not folder.is_dir():
        raise ConfigError(f"{kind} folder {str(folder)!r}", "is not a folder")
    names: list[str] = []
    for entry in sorted(folder.iterdir()):
        if not entry.name.endswith(suffix) or entry.name.startswith("."):
            continue
        name = entry.name[: -len(suffix)]
        if name not in known:
            expected = ", ".join(f"{n}{suffix}" for n in known)
            raise ConfigError(
                f"{kind} folder {str(folder)!r}",
                f"holds {entry.name!r}, which replaces no shipped file; use one of {expected}",
            )
        names.append(name)
    return tuple(names)


@contextlib.contextmanager
def using_overrides(overrides: Overrides) -> Iterator[Overrides]:
    """Make ``overrides`` the files every prompt and contract load reads inside the block."""
    token = _ACTIVE.set(overrides)
    try:
        yield overrides
    finally:
        _ACTIVE.reset(token)


def override_file(folder: Path | None, file_name: str) -> Path | None:
    """The author's file of that name in ``folder``, when the folder holds it."""
    if folder is None:
        return None
    path = folder / file_name
    return path if path.is_file() else None


def read_override(path: Path) -> bytes:
    """The bytes of an author's file, bounded before they are parsed."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_OVERRIDE_BYTES + 1)
    except OSError as error:
        raise ConfigError(
            f"override {os.fspath(path)!r}", f"cannot be read: {error.strerror}"
        ) from error
    if len(data) > MAX_OVERRIDE_BYTES:
        raise ConfigError(
            f"override {os.fspath(path)!r}", f"is larger than {MAX_OVERRIDE_BYTES} bytes"
        )
    return data
