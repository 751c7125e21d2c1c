"""The repository key of a plain checkout, derived with ``os`` alone, for the fallback's first call.

:func:`active_memory.repository.repository_key` is the one derivation of the key. Importing it
costs the hook fallback's first call in a workspace ``pathlib`` (with ``urllib.parse`` and
``ipaddress``) and ``re``: about 6 ms, far more than deriving the key. Most checkouts are
plain: a ``.git`` folder, a config of ASCII lines, an ``origin`` URL such as
``https://host/owner/repo.git`` or ``git@host:owner/repo.git``. For those, this module reads the
same files the same way and gives the same key. Anything else (a linked worktree or a submodule,
a config line not read as plainly here, a remote with a port, credentials, a query, a quoted or
commented value, characters outside the key's alphabet, no remote, an error the derivation
would raise) gives None, and the caller asks :mod:`active_memory.repository`. A test checks
that both agree on many checkouts and remotes.
"""

from __future__ import annotations

import errno
import os
import stat

from active_memory.limits import LIMITS

__all__ = ["plain_checkout", "plain_repository_key"]

# What pathlib's exists() and is_dir() take for "no": any other error, they raise.
_ABSENT = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
_CONFIG_BYTES = 1 << 20  # repository._GIT_FILE_BYTES: a bigger config is not a checkout's own
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_HOST = frozenset(_LOWER + _LOWER.upper() + _DIGITS + ".-")
_NAME = _HOST  # a config section's name: [A-Za-z0-9.-]
_USER = frozenset(_HOST | {"_"})
_SEGMENT = frozenset(_HOST | {"_", "~"})  # a key's path segment: [A-Za-z0-9._~-]
_PATH = frozenset(_SEGMENT | {"/"})
_SCHEMES = ("https", "http", "ssh", "git")  # those whose port the key leaves out


class _NotPlain(Exception):
    """Left to the full derivation."""


def _status(path: str) -> os.stat_result | None:
    """``os.stat(path)``, None where pathlib's exists() says no; _NotPlain where it raises."""
    try:
        return os.stat(path)
    except OSError as error:
        if error.errno in _ABSENT:
            return None
        raise _NotPlain from None
    except ValueError:
        return None


def plain_checkout(real_workspace: str) -> tuple[str, str] | None:
    """The checkout holding ``real_workspace`` and its ``.git`` folder, as
    ``repository.find_checkout`` and ``git_dir`` find them; None when there is no checkout, its
    ``.git`` is not a folder (a linked worktree, a submodule) or finding it would raise."""
    try:
        current = os.path.realpath(real_workspace)
        while _status(os.path.join(current, ".git")) is None:
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent
        dot_git = os.path.join(current, ".git")
        found = _status(dot_git)
    except _NotPlain:
        return None
    if found is None or not stat.S_ISDIR(found.st_mode):
        return None
    return current, dot_git


def _config_text(path: str) -> str | None:
    """The config at ``path`` as ``repository`` reads it: a regular file, opened without
    blocking, within the bound; None otherwise."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        descriptor = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        data = os.read(descriptor, _CONFIG_BYTES + 1)
        while data and len(data) <= _CONFIG_BYTES:
            more = os.read(descriptor, _CONFIG_BYTES + 1 - len(data))
            if not more:
                break
            data += more
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return None if len(data) > _CONFIG_BYTES else data.decode("utf-8", "replace")


def _section(bare: str) -> tuple[str, str | None]:
    """``[name]`` or ``[name "subsection"]``, alone on its line; _NotPlain for anything else."""
    if not bare.endswith("]") or bare.count("[") != 1 or bare.count("]") != 1:
        raise _NotPlain
    inner = bare[1:-1]
    name, quote, rest = inner.partition('"')
    subsection = None
    if quote:
        # A space or tab between the name and the quote, the subsection then ends the line.
        if name.rstrip(" \t") == name or "\\" in rest:
            raise _NotPlain
        rest = rest.rstrip(" \t")
        if not rest.endswith('"') or rest.count('"') != 1:
            raise _NotPlain
        subsection = rest[:-1]
    name = name.strip(" \t")
    if not name or not _NAME.issuperset(name):
        raise _NotPlain
    return name, subsection


def _origin_url(text: str) -> str:
    """The ``url`` of ``[remote "origin"]``, as ``repository.origin_url`` reads it from a
    config of plain lines (ASCII, printable, tabs); _NotPlain otherwise, or when it has none."""
    in_origin = False
    for line in text.splitlines():
        if not line.isascii() or not line.replace("\t", " ").isprintable():
            raise _NotPlain
        bare = line.strip(" \t")
        if bare.startswith("["):
            name, subsection = _section(bare)
            in_origin = name.lower() == "remote" and subsection == "origin"
            continue
        name, equals, value = bare.partition("=")
        if in_origin and equals and name.rstrip(" \t").lower() == "url":
            value = value.strip(" \t")
            if not value or not value.isprintable() or any(c in value for c in '"\\;#'):
                raise _NotPlain  # empty, quoted or commented: the full reading decides
            return value
    raise _NotPlain  # no origin remote: a local key (hashed) is the full derivation's


def _key_from_remote(url: str) -> str:
    """``repository.repository_key_from_remote(url)`` for a plain https/http/ssh/git URL or an
    scp-like ``user@host:owner/repo``; _NotPlain for any other, or a key it would refuse."""
    scheme, separator, rest = url.partition("://")
    if separator:
        if scheme not in _SCHEMES:
            raise _NotPlain
        host, slash, path = rest.partition("/")
        path = slash + path
    else:
        user, at, rest = url.rpartition("@")
        if at and (not user or not _USER.issuperset(user)):
            raise _NotPlain
        host, colon, path = rest.partition(":")
        if not colon or path.startswith("//"):
            raise _NotPlain
    if not host or not _HOST.issuperset(host) or not _PATH.issuperset(path):
        raise _NotPlain
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    key = f"forge:{host.lower()}/{path}"
    segments = path.split("/")
    if not all(segments) or ".." in key or len(key.encode("utf-8")) > LIMITS.repository_key_bytes:
        raise _NotPlain
    return key


def plain_repository_key(git_directory: str) -> str | None:
    """The key ``repository.repository_key`` gives a checkout whose ``.git`` folder is
    ``git_directory`` (from :func:`plain_checkout`), when its config and origin are plain;
    None when the full derivation must decide."""
    text = _config_text(os.path.join(git_directory, "config"))
    if text is None:
        return None
    try:
        return _key_from_remote(_origin_url(text))
    except _NotPlain:
        return None
