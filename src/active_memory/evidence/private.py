"""Private files beside the evidence: complete copies the specialist may read in full.

The folder is created 0700 and each file written 0600, atomically (temporary name, then
rename), so a reader never sees half a file and nobody else on the machine can read either.
"""

from __future__ import annotations

import os
from pathlib import Path

from active_memory.errors import EvidenceError
from active_memory.private_files import make_private_dir, write_private_text

__all__ = ["prepare_private_dir", "write_private_file"]


def prepare_private_dir(path: str | os.PathLike[str]) -> Path:
    """The evidence folder, made exactly 0700 (an existing one too); EvidenceError naming it."""
    folder = Path(path)
    try:
        return make_private_dir(folder)
    except OSError as exc:
        raise EvidenceError(
            f"cannot prepare private evidence folder {str(folder)!r}: {exc.strerror or exc}"
        ) from exc


def write_private_file(folder: Path, name: str, text: str) -> str:
    """Write ``folder/name`` with mode 0600; returns ``name`` (what the payload records)."""
    target = folder / name
    try:
        write_private_text(target, text)
    except OSError as exc:
        raise EvidenceError(
            f"cannot write private evidence file {str(target)!r}: {exc.strerror or exc}"
        ) from exc
    return name
