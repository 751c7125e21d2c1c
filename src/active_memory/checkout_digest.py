"""The checkout fingerprint's digest, and the parsing of the git output it needs (``status
--porcelain=v2 -z``, ``config -z --get-regexp``). Pure functions over what git printed (apart
from reading changed files), so :mod:`active_memory.provenance` can take those outputs from
whichever git commands answer them: one inspection asks git as few times as it can."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from active_memory.bounded_input import open_regular
from active_memory.errors import InputRefused

__all__ = [
    "checkout_digest",
    "config_entries",
    "config_text",
    "has_changes",
    "split_branch_headers",
]


def split_branch_headers(porcelain_v2: bytes) -> tuple[dict[bytes, bytes], bytes]:
    """The ``# branch.*`` headers of ``status --porcelain=v2 --branch -z`` and the rest, byte for
    byte what the same status without ``--branch`` prints: another header (the ``# stash N`` that
    ``status.showStash`` adds) stays, since fingerprint's own status prints it. Headers only
    lead: a later token starting ``# `` is a rename's original path."""
    headers: dict[bytes, bytes] = {}
    kept: list[bytes] = []
    leading, entries = _leading_headers(porcelain_v2)
    for header in leading:
        name, _, value = header[2:].removesuffix(b"\0").partition(b" ")
        if name.startswith(b"branch."):
            headers[name] = value
        else:
            kept.append(header)
    return headers, b"".join(kept) + entries


def has_changes(porcelain_v2: bytes) -> bool:
    """Whether ``status --porcelain=v2 -z`` names a change, an unmerged or an untracked path
    (what ``--porcelain=v1`` would print anything for): its leading headers are not changes."""
    return bool(_leading_headers(porcelain_v2)[1].strip(b"\0"))


def _leading_headers(porcelain_v2: bytes) -> tuple[list[bytes], bytes]:
    """The ``# `` header tokens that lead a ``status --porcelain=v2 -z`` output, each with its NUL,
    and the entries after them."""
    headers: list[bytes] = []
    offset = 0
    while porcelain_v2.startswith(b"# ", offset):
        end = porcelain_v2.find(b"\0", offset)
        end = len(porcelain_v2) if end < 0 else end + 1
        headers.append(porcelain_v2[offset:end])
        offset = end
    return headers, porcelain_v2[offset:]


def _changed_paths(porcelain_v2: bytes) -> list[bytes]:
    """Paths named by ``git status --porcelain=v2 -z`` (changed, unmerged or untracked)."""
    tokens = porcelain_v2.split(b"\0")
    paths: list[bytes] = []
    index = 0
    while index < len(tokens):
        entry = tokens[index]
        index += 1
        if entry.startswith(b"1 "):
            paths.append(entry.split(b" ", 8)[8])
        elif entry.startswith(b"2 "):
            paths.append(entry.split(b" ", 9)[9])
            paths.append(tokens[index])  # the rename's original path follows
            index += 1
        elif entry.startswith(b"u "):
            paths.append(entry.split(b" ", 10)[10])
        elif entry.startswith(b"? "):
            paths.append(entry[2:])
    return paths


def _worktree_digest(root: Path, relative: bytes) -> bytes:
    full = Path(os.fsdecode(os.path.join(os.fsencode(root), relative)))
    try:
        info = full.lstat()
    except FileNotFoundError:
        return b"missing"
    if stat.S_ISLNK(info.st_mode):
        return b"link:" + os.fsencode(os.readlink(full))
    if not stat.S_ISREG(info.st_mode):
        return b"other"
    digest = hashlib.sha256()
    try:  # without blocking: a file swapped for a FIFO since the lstat is not waited on
        descriptor = open_regular(full, what=repr(str(full)), follow_symlinks=False)
    except InputRefused:
        return b"other"
    with os.fdopen(descriptor, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    executable = b"x" if info.st_mode & stat.S_IXUSR else b"-"
    return executable + digest.hexdigest().encode()


def config_entries(config_z: bytes) -> list[tuple[bytes, bytes | None]]:
    """``(key, value)`` per entry of ``git config -z --get-regexp``; None: a key without ``=``."""
    entries: list[tuple[bytes, bytes | None]] = []
    for record in config_z.split(b"\0"):
        if record:
            key, newline, value = record.partition(b"\n")
            entries.append((key, value if newline else None))
    return entries


def config_text(config_z: bytes) -> bytes:
    """What ``git config --get-regexp`` prints without ``-z`` (``key value`` lines), from its
    ``-z`` output: the fingerprint's config input."""
    entries = config_entries(config_z)
    return b"".join(key + (b"" if v is None else b" " + v) + b"\n" for key, v in entries)


def checkout_digest(root: Path, head: bytes, index: bytes, status: bytes, config: bytes) -> str:
    """The sha256 :func:`active_memory.provenance.fingerprint` describes, from the outputs of
    ``rev-parse --verify -q HEAD``, ``ls-files --stage -z``, ``status --porcelain=v2 -z`` (no
    branch headers) and the remote and extension config."""
    digest = hashlib.sha256()

    def feed(label: bytes, data: bytes) -> None:
        digest.update(label + b"\0" + str(len(data)).encode() + b"\0" + data)

    feed(b"head", head.strip() or b"unborn")
    feed(b"index", index)
    feed(b"status", status)
    for relative in sorted(set(_changed_paths(status))):
        feed(b"file:" + relative, _worktree_digest(root, relative))
    feed(b"config", b"\n".join(sorted(config.splitlines())))
    return digest.hexdigest()
