"""The specialists as data: the package folders ``prompts/`` and ``contracts/``, read only here.

::

    prompts/     preamble.md, one NAME.md per specialist, run_material.md (Markdown templates)
    contracts/   NAME.schema.json per specialist, card.schema.json (the card a specialist
                 writes), run-record.schema.json (run.json, for hosts that write it without Python)

:mod:`active_memory.agents.prompts` renders the prompts and :mod:`active_memory.admission`
validates answers against the contracts; both read the files through :func:`read_file`, so where
a specialist's text comes from is decided in one place: the installed package, or an author's
copy of a folder (``cp -r .../active_memory/prompts my-prompts``, edit, ``--prompts
my-prompts``). Inside a :func:`using_overrides` block every file of a copied folder is read from
the copy; the block is a context variable, so the concurrent sessions of one postmortem and the
tasks they start all see the same files.

A copy must hold exactly the shipped folder's files, by name. A file missing from it, or one
that replaces nothing (a typo, the other folder), is refused when the block is entered, naming
the files, so a wrong folder can never leave a shipped file silently in force.

Low in the layers (the models, admission and agents read it); besides the standard library it
imports only the bounded reader and the errors.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Literal, TypeAlias

from active_memory.bounded_input import read_bytes
from active_memory.errors import ConfigError, InputRefused

__all__ = [
    "FOLDERS",
    "MAX_FILE_BYTES",
    "Folder",
    "Overrides",
    "active_overrides",
    "check_copy",
    "read_file",
    "shipped_folder",
    "shipped_names",
    "using_overrides",
]

Folder: TypeAlias = Literal["prompts", "contracts"]
FOLDERS: tuple[Folder, ...] = ("prompts", "contracts")
# Only these are the folder's files: a copy may also hold notes or editor backups.
_SUFFIXES = MappingProxyType({"prompts": ".md", "contracts": ".schema.json"})

# A prompt or a contract is a few KiB; anything far beyond is not one.
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Overrides:
    """An author's copy of each folder (None: the shipped one)."""

    prompts: Path | None = None
    contracts: Path | None = None


_SHIPPED = Overrides()
_ACTIVE: ContextVar[Overrides | None] = ContextVar("active_memory_overrides", default=None)


def shipped_folder(folder: Folder) -> Traversable:
    """The installed folder (a real directory for any installed wheel or checkout)."""
    return resources.files("active_memory").joinpath(folder)


def _data_files(folder: Folder, names: Iterable[str]) -> frozenset[str]:
    return frozenset(
        name for name in names if name.endswith(_SUFFIXES[folder]) and not name.startswith(".")
    )


@functools.cache
def shipped_names(folder: Folder) -> tuple[str, ...]:
    """The file names the installed folder holds, sorted: what a copy must hold."""
    entries = shipped_folder(folder).iterdir()
    return tuple(sorted(_data_files(folder, (e.name for e in entries if e.is_file()))))


def check_copy(folder: Folder, path: Path) -> None:
    """ConfigError unless ``path`` is a folder holding exactly the shipped folder's files."""
    where = f"{folder} folder {str(path)!r}"
    if not path.is_dir():
        raise ConfigError(where, "is not a folder")
    try:
        held = _data_files(folder, os.listdir(path))
    except OSError as error:
        raise ConfigError(where, f"cannot be listed ({error.strerror or error})") from error
    shipped = frozenset(shipped_names(folder))
    problems = []
    if missing := sorted(shipped - held):
        problems.append(f"lacks {', '.join(missing)}")
    if unknown := sorted(held - shipped):
        problems.append(f"holds {', '.join(unknown)}, not a shipped file name")
    if problems:
        source = str(shipped_folder(folder))
        raise ConfigError(
            where, f"{'; '.join(problems)}; copy {source!r} (cp -r) and edit the copy"
        )


def active_overrides() -> Overrides:
    return _ACTIVE.get() or _SHIPPED


@contextlib.contextmanager
def using_overrides(overrides: Overrides) -> Iterator[Overrides]:
    """Read every file of the folders ``overrides`` names from the author's copies inside the
    block; each copy is checked first (:func:`check_copy`)."""
    for folder in FOLDERS:
        copy = getattr(overrides, folder)
        if copy is not None:
            check_copy(folder, copy)
    token = _ACTIVE.set(overrides)
    try:
        yield overrides
    finally:
        _ACTIVE.reset(token)


def read_file(folder: Folder, name: str) -> bytes:
    """The bytes of ``folder/name``: the author's copy inside a :func:`using_overrides` block
    that names one, else the shipped file."""
    return _read(folder, getattr(active_overrides(), folder), name)


# Cached: admission reads a contract for every item it judges. A copy is therefore read once a
# process; an author edits it between runs, not during one.
@functools.cache
def _read(folder: Folder, copy: Path | None, name: str) -> bytes:
    if name not in shipped_names(folder):
        # Callers pass names they know; anything else (a path, a typo) is a bug, not input.
        raise ValueError(f"{folder}/ ships no {name!r}; it holds {list(shipped_names(folder))!r}")
    if copy is None:
        return shipped_folder(folder).joinpath(name).read_bytes()
    path = copy / name
    try:
        return read_bytes(path, what=repr(str(path)), max_bytes=MAX_FILE_BYTES)
    except InputRefused as error:
        raise ConfigError(f"{folder} file {str(path)!r}", error.problem) from error
