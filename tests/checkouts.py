"""Recorded runs as real git checkouts, built once per test process and copied for each test.

``materialized`` takes what :func:`active_memory.demo.materialize_run` takes and gives the same
folder: run.json with the checkout's commit, the transcripts, and a git checkout whose history
is the same (with a ``date`` the commit ids are identical too). Building a checkout starts several
git processes; a hundred tests build the same few, so each is built once in a folder of this
process's own and copied. A copy is the test's to change.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar, cast

from active_memory.demo import DEMO_REMOTE, bundle_folder, materialize_run

Built = TypeVar("Built")
_built: dict[str, tuple[Path, object]] = {}
_templates: list[Path] = []


def materialized(
    source: str | os.PathLike[str] | Mapping[str, str],
    destination: str | os.PathLike[str],
    *,
    parent: str | os.PathLike[str] | None = None,
    remote: str | None = DEMO_REMOTE,
    date: str | None = None,
) -> tuple[Path, str]:
    """``materialize_run`` of the same arguments, built once and copied to ``destination``."""
    files = source if isinstance(source, Mapping) else bundle_folder(source)
    base = None if parent is None else _head(Path(parent))
    key = hashlib.sha256(
        json.dumps([sorted(files.items()), base, remote, date]).encode()
    ).hexdigest()
    template, (_, commit) = built_once(
        key, lambda folder: materialize_run(files, folder, parent=parent, remote=remote, date=date)
    )
    folder = Path(destination)
    copy_built(template, folder, ("checkout",))
    return folder, commit


def built_once(key: str, build: Callable[[Path], Built]) -> tuple[Path, Built]:
    """``build(folder)`` run once per test process for ``key``, in a folder of this process's
    own: that folder (to copy, never to change) and what ``build`` returned."""
    if key not in _built:
        folder = _template_root() / key
        _built[key] = (folder, build(folder))
    template, built = _built[key]
    return template, cast(Built, built)


def copy_built(template: Path, destination: Path, checkouts: Iterable[str]) -> None:
    """Copy ``template`` into ``destination``; ``checkouts`` are its git work trees (relative)."""
    shutil.copytree(template, destination, symlinks=True, dirs_exist_ok=True)
    # The copy's files have new inodes and times: refresh the index's stat data, or git would
    # see every file as possibly changed until something else refreshed it.
    for checkout in checkouts:
        subprocess.run(
            ["git", "-C", str(destination / checkout), "update-index", "-q", "--refresh"],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip


def _head(checkout: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        check=True, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.strip()


def _template_root() -> Path:
    if not _templates:
        _templates.append(Path(tempfile.mkdtemp(prefix="am-test-checkouts-")))
        atexit.register(shutil.rmtree, _templates[0], ignore_errors=True)
    return _templates[0]
