"""Broker tickets: private curl configuration files naming a broker and its token.

A ``curl`` hook reads one with ``-K`` (so the token never appears on a command line, where
other local users could see it in the process list) and the Python helper reads the same file.
Ids travel percent-encoded in ``X-Active-Memory-*`` headers. A ticket names one broker start:
``active-memory serve`` writes a new token into it at every start and removes it on exit
(:func:`remove_ticket`), so a hook never sends a live token to whatever binds the port later.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from active_memory.bounded_input import read_text
from active_memory.errors import InputRefused
from active_memory.private_files import write_private_text

__all__ = ["read_ticket", "remove_ticket", "write_ticket"]

MAX_TICKET_BYTES = 8192


def _curl_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_ticket(
    path: str | os.PathLike[str], url: str, token: str, ids: Mapping[str, str | None] | None = None
) -> Path:
    """Write (atomically, mode 0600) a ticket for ``url``; ``ids`` maps node/conversation/…"""
    lines = [
        "# active-memory broker ticket: private, do not share or commit",
        f"url = {_curl_string(url)}",
        f"header = {_curl_string('Authorization: Bearer ' + token)}",
    ]
    for name, value in sorted((ids or {}).items()):
        if value:
            header = f"X-Active-Memory-{name.capitalize()}: {quote(value, safe='')}"
            lines.append(f"header = {_curl_string(header)}")
    target = Path(path)
    write_private_text(target, "\n".join(lines) + "\n")
    return target


def _curl_value(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


def _ticket_text(path: str | os.PathLike[str]) -> str:
    """The text of a ticket through the bounded reader: a FIFO in its place cannot hang us;
    ValueError names what is wrong with it."""
    what = repr(os.fspath(path))
    try:
        return read_text(path, what=what, max_bytes=MAX_TICKET_BYTES)
    except InputRefused as refused:
        if refused.problem == "does not exist":
            raise FileNotFoundError(errno.ENOENT, "no such ticket", os.fspath(path)) from None
        raise ValueError(f"{refused}; remove it") from None


def read_ticket(path: str | os.PathLike[str]) -> tuple[str, str]:
    """The broker url and token a ticket names; ValueError when it names neither."""
    url = token = ""
    for line in _ticket_text(path).splitlines():
        name, sep, value = line.partition("=")
        if not sep or line.lstrip().startswith("#"):
            continue
        value = _curl_value(value)
        if name.strip() == "url":
            url = value
        elif name.strip() == "header" and value.lower().startswith("authorization: bearer "):
            token = value[len("authorization: bearer ") :].strip()
    if not url or not token:
        raise ValueError(f"{str(path)!r} is not a broker ticket (no url or token)")
    return url, token


def remove_ticket(path: str | os.PathLike[str], token: str) -> bool:
    """Remove the ticket at ``path`` if it still names ``token``; True when it was removed.

    A ticket rewritten since (by a newer broker for the same workspace) is left alone.
    """
    try:
        if read_ticket(path)[1] != token:
            return False
    except (OSError, ValueError):
        return False
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return True
