"""Private files: written whole (temporary name, then rename) with mode 0600.

Tickets, broker state, latched outcomes and evidence copies all hold things other users of the
machine must not read, and a reader must never see half of one. ``store/`` keeps its own copy of
these few lines on purpose: it imports nothing of the package but the lesson model.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["fsync_directory", "write_private_text"]


def fsync_directory(folder: Path) -> None:
    """Make a rename in ``folder`` durable where the platform allows it."""
    # Directories cannot be opened for fsync on every platform (Windows); there the rename is
    # as durable as the OS makes it.
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_private_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically, mode 0600; OSError on failure, nothing left.

    ``durable`` also fsyncs the file and its folder, for records that must survive a crash.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(temporary, flags, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)  # an old temporary may have kept another mode
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    if durable:
        fsync_directory(path.parent)
