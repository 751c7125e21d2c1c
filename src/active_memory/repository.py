"""Repository identity: the credential-free key lessons are stored and recalled under.

``forge:host[:port]/owner/repo`` from the ``origin`` remote when there is one (credentials
dropped), else ``local:<hash>`` of the checkout's top-level directory, whichever folder inside it
is given; ``repo:<name>`` is an opaque key a host may choose. The remote is read from the git
configuration without running git. ``.git`` may be a directory, or a file pointing at a linked
worktree's or a submodule's git directory (a worktree's ``commondir`` holds the shared config).
Those files are opened only when they are regular files, without blocking and up to a bound: a
FIFO named ``.git`` or ``config`` in a checkout must not hold the process (the hook path
included) waiting for a writer.

This is the only derivation of the key: the models, recall (the stdlib-only hook path included)
and checkout inspection all call :func:`repository_key`, so a lesson published from one folder of
a checkout is recalled from any other. Standard library only.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from urllib.parse import urlsplit

from active_memory.limits import LIMITS
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from active_memory.errors import LessonValidationError

__all__ = [
    "find_checkout",
    "git_dir",
    "local_repository_key",
    "origin_url",
    "repository_key",
    "repository_key_from_remote",
    "validate_repository_key",
]

KEY_BYTES = LIMITS.repository_key_bytes
# Credential-free repository keys: forge:host[:port]/owner/repo, local:<hex>, repo:<opaque>.
_REPOSITORY_KEY = re.compile(
    r"forge:[a-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~-]+)+"
    r"|local:[0-9a-f]{16,64}"
    r"|repo:[A-Za-z0-9._~/-]+"
)


def validate_repository_key(field_name: str, value: object) -> str:
    """``value`` if it is a credential-free key, else LessonValidationError naming the field."""
    if not isinstance(value, str):
        raise _invalid(field_name, f"must be a string, got {type(value).__name__}")
    problem = _key_problem(value)
    if problem:
        raise _invalid(field_name, problem)
    return value


def _key_problem(value: str) -> str | None:
    # The pattern admits no whitespace or control character, so it also keeps the key one line.
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > KEY_BYTES:
        return f"is {size} UTF-8 bytes; the limit is {KEY_BYTES}"
    if not _REPOSITORY_KEY.fullmatch(value) or "@" in value or ".." in value:
        return (
            f"{value!r} is not a credential-free repository key "
            "(forge:host/owner/repo, local:<hex> or repo:<name>)"
        )
    return None


def _invalid(field_name: str, problem: str) -> LessonValidationError:
    # Imported where raised: the hook fallback's first call derives a key here and loads no
    # exception tree (about 1 ms) when the key derives cleanly.
    from active_memory.errors import LessonValidationError

    return LessonValidationError(field_name, problem)


def repository_key_from_remote(url: str) -> str:
    """Turn a git remote URL into ``forge:host/owner/repo``, dropping any credentials.

    Accepts ``https://user:token@host/owner/repo.git``, ``ssh://git@host:22/owner/repo`` and
    scp-like ``git@host:owner/repo.git``.
    """
    key = _forge_key(url)
    if key is None:
        raise _invalid("repository", f"cannot derive a key from remote {url!r}")
    return validate_repository_key("repository", key)


def _forge_key(url: str) -> str | None:
    """The unchecked ``forge:`` key of ``url``, None when it names no host and path."""
    text = url.strip()
    scp = re.fullmatch(r"(?:[^@/\s]+@)?([A-Za-z0-9.-]+):(?!//)([^\s]+)", text)
    if scp and "://" not in text:
        host, path, port = scp.group(1), scp.group(2), None
    else:
        parts = urlsplit(text)
        if not parts.hostname or not parts.path.strip("/"):
            return None
        host, path = parts.hostname, parts.path
        port = parts.port if parts.scheme not in ("https", "http", "ssh", "git") else None
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    host = host.lower()
    return f"forge:{host}{f':{port}' if port else ''}/{path}"


def local_repository_key(checkout: str | os.PathLike[str]) -> str:
    """A stable key for a checkout without a remote: a hash of its resolved absolute path."""
    # Imported here: hashlib loads OpenSSL (about 2.5 ms), which a checkout with an origin
    # remote (the hook fallback's first call, for one) never needs.
    import hashlib

    resolved = os.path.realpath(os.fspath(checkout))
    return "local:" + hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:32]


# A gitfile and a commondir are one line; a git config beyond this is not a checkout's own.
_GIT_FILE_BYTES = 1 << 20
# Not the bounded reader: this module is on the hook path, which imports nothing it can avoid.
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _read_regular(path: Path, errors: str) -> str | None:
    """The text of the regular file at ``path``; None for a missing or unreadable file, one over
    the bound, or anything that is not a regular file (never opened, or opened without waiting
    and refused by ``fstat`` when swapped in since the ``stat``)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        descriptor = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= _GIT_FILE_BYTES:
            chunk = os.read(descriptor, _GIT_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    if size > _GIT_FILE_BYTES:
        return None
    return b"".join(chunks).decode("utf-8", errors)


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_URL = re.compile(r"\s*url\s*=\s*(.*?)\s*$", re.IGNORECASE)


def find_checkout(path: str | os.PathLike[str]) -> Path | None:
    """The top-level directory of the git checkout containing ``path``, if any.

    Like ``git rev-parse --show-toplevel``: symlinks are resolved first, then the nearest folder
    holding ``.git`` (a directory, or the file of a linked worktree or submodule) wins.
    """
    current = Path(os.path.realpath(os.fspath(path)))
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def git_dir(checkout: Path) -> Path | None:
    """The git directory holding the shared config (a linked worktree's ``commondir``)."""
    dot_git = checkout / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read_regular(dot_git, "surrogateescape")
    if text is None or not text.startswith("gitdir:"):
        return None
    linked = Path(text[len("gitdir:") :].strip())
    linked = linked if linked.is_absolute() else checkout / linked
    common = _read_regular(linked / "commondir", "surrogateescape")
    if common is None:
        return linked
    return Path(os.path.normpath(linked / common.strip()))


def _unquote(value: str) -> str:
    value = re.split(r"\s[;#]", value, maxsplit=1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def origin_url(checkout: Path) -> str | None:
    """The ``url`` of ``[remote "origin"]`` in the checkout's git config, if set."""
    directory = git_dir(checkout)
    if directory is None:
        return None
    text = _read_regular(directory / "config", "replace")
    if text is None:
        return None
    lines = text.splitlines()
    in_origin = False
    for line in lines:
        section = _SECTION.match(line)
        if section:
            in_origin = section.group(1).lower() == "remote" and section.group(2) == "origin"
            line = section.group(3)
        if in_origin:
            url = _URL.match(line)
            if url:
                return _unquote(url.group(1)) or None
    return None


def repository_key(workspace: str | os.PathLike[str]) -> str:
    """``forge:host/owner/repo`` from the origin remote, else ``local:<hash>`` of the checkout."""
    checkout = find_checkout(workspace)
    if checkout is None:
        return local_repository_key(workspace)
    url = origin_url(checkout)
    key = _forge_key(url) if url else None
    if key is not None and _key_problem(key) is None:
        return key
    # A remote we cannot name (a local path, say) identifies nothing portable.
    return local_repository_key(checkout)
