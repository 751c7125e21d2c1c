"""The private folders hooks keep state in: the broker's state directory, and the one beside the
store where the hook fallback keeps exposures and its cached index.

Standard library and the exception tree only: the fallback checks its folder on every call.
The folder is made by :func:`active_memory.private_files.make_private_dir` (exactly 0700 when
new, a symlink refused); an existing one is not tightened here but refused unless it is this
user's alone.
"""

from __future__ import annotations

import os
import sys

from active_memory.errors import RecallError
from active_memory.private_files import make_private_dir

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers see True
if TYPE_CHECKING:
    from typing import Any

__all__ = ["digest_name", "private_dir"]


def _sha256() -> Any:
    """CPython's own SHA-256 (``_sha256`` up to 3.11, ``_sha2`` after): hashlib would load
    OpenSSL first, which costs a hook call about 3 ms. Other interpreters get hashlib's."""
    try:
        return __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    except (ImportError, AttributeError):
        import hashlib

        return hashlib.sha256


_SHA256 = _sha256()


def digest_name(text: str) -> str:
    """A file name for ``text`` (a path, a conversation id…): 32 hex digits of its sha256."""
    digest: str = _SHA256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:32]


def private_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` (mode 0700) if needed and refuse one that others can read or write.

    OSError when it cannot be created or is a symlink; RecallError when it exists but is not
    this user's alone.
    """
    make_private_dir(path, tighten=False)
    info = os.stat(path)
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise RecallError(
            f"{os.fspath(path)!r} must be a directory only you can use (mode 0700); "
            f"run `chmod 700 {os.fspath(path)}`"
        )
