"""The one bounded reader for what a user or a file hands the toolkit.

Run records, transcripts, runtime JSON, import lines, tickets and latched outcomes are all read
here, so each is bounded the same way before anything parses it:

* a path with a NUL is refused (every system call would fail on it with a bare ValueError);
* only regular files are opened: a FIFO, a device or a socket is refused by its type from
  ``os.stat`` before any ``open`` (a FIFO blocks ``open`` until a writer comes, ``/dev/zero``
  never ends). The open itself is non-blocking and ``fstat`` checks the descriptor again, so a
  file swapped for a FIFO between the two cannot hold the process either;
* the size is checked before a byte is read, and reading stops one byte past the limit (a file
  that grows while read, or a stream, cannot make it read more);
* text is strict UTF-8 with a message naming the byte and line that is not;
* JSON is parsed with its nesting depth and the length of its numbers bounded (Python refuses
  integers over 4,300 digits with a bare ValueError, and deep nesting with RecursionError), and
  a lone surrogate escape (``"\\ud800"``, which no UTF-8 writer can encode later) refused.
  ``NaN`` and ``Infinity`` are read as Python's own ``json`` writes them.

Every refusal is :class:`~active_memory.errors.InputRefused`: ``what`` names the input and
``problem`` says what is wrong and what to do, one sentence. Callers with their own error type
(a run record, a runtime config, an import line) re-raise ``problem`` under it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import IO, Any

from active_memory.errors import InputRefused

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_NUMBER_CHARS",
    "check_path",
    "decode_utf8",
    "file_kind",
    "open_regular",
    "parse_json",
    "read_bytes",
    "read_json",
    "read_stream",
    "read_text",
    "regular_file_problem",
]

# Deeper than any document the toolkit writes or reads (run records nest about six levels).
MAX_JSON_DEPTH = 64
# An int64 has 19 digits and a float's shortest form about 25 characters.
MAX_NUMBER_CHARS = 100

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SURROGATE = re.compile("[\ud800-\udfff]")
_READ_CHUNK = 1 << 20


# What a file that is not a regular one may be, each with its test on a mode.
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a file of this mode is, in words for an error message."""
    for is_kind, words in _FILE_KINDS:
        if is_kind(mode):
            return words
    return "not a regular file"


def check_path(path: str | os.PathLike[str], *, what: str) -> str:
    """``path`` as a string; InputRefused when it holds a NUL character."""
    text = os.fspath(path)
    if "\0" in text:
        raise InputRefused(what, "has a NUL character in its path; pass a real file path")
    return text


def _not_regular(mode: int) -> str:
    return f"is {file_kind(mode)}, not a regular file; pass a regular file"


def regular_file_problem(
    path: str | os.PathLike[str], *, follow_symlinks: bool = True
) -> str | None:
    """Why ``path`` cannot be read as a regular file (None: it can), without opening it.

    A missing file is a problem too ("does not exist"); a caller for which missing is fine
    checks ``os.path.lexists`` first.
    """
    text = os.fspath(path)
    if "\0" in text:
        return "has a NUL character in its path; pass a real file path"
    try:
        info = os.stat(text) if follow_symlinks else os.lstat(text)
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:
        return f"cannot be inspected ({error.strerror or error})"
    if not stat.S_ISREG(info.st_mode):
        return _not_regular(info.st_mode)
    return None


def open_regular(path: str | os.PathLike[str], *, what: str, follow_symlinks: bool = True) -> int:
    """A read-only descriptor on the regular file at ``path``; never blocks, never a FIFO.

    ``follow_symlinks=False`` also refuses a symlink (the final component).
    """
    text = check_path(path, what=what)
    problem = regular_file_problem(text, follow_symlinks=follow_symlinks)
    if problem is not None:
        raise InputRefused(what, problem)
    try:
        fd = os.open(text, _FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    except FileNotFoundError:
        raise InputRefused(what, "does not exist") from None
    except OSError as error:
        raise InputRefused(what, f"cannot be opened ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            # Swapped in after the stat above: the non-blocking open did not wait on it.
            raise InputRefused(what, _not_regular(info.st_mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # regular files never block; plain reads from here on
    except BaseException:
        os.close(fd)
        raise
    return fd


def _too_large(size: int | str, max_bytes: int) -> str:
    return (
        f"is {size} bytes, over the limit of {max_bytes} bytes; pass a smaller file (nothing "
        "was read)"
    )


def _read_limited(fd: int, what: str, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= max_bytes:
        chunk = os.read(fd, min(_READ_CHUNK, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > max_bytes:
        raise InputRefused(what, _too_large(f"more than {max_bytes}", max_bytes))
    return b"".join(chunks)


def read_bytes(
    path: str | os.PathLike[str], *, what: str, max_bytes: int, follow_symlinks: bool = True
) -> bytes:
    """The whole regular file at ``path``, at most ``max_bytes`` of it (else InputRefused)."""
    fd = open_regular(path, what=what, follow_symlinks=follow_symlinks)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise InputRefused(what, _too_large(size, max_bytes))
        try:
            return _read_limited(fd, what, max_bytes)
        except OSError as error:
            raise InputRefused(what, f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)


def read_stream(stream: IO[bytes], *, what: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` from an already open binary stream (standard input)."""
    try:
        data = stream.read(max_bytes + 1)
    except OSError as error:
        raise InputRefused(what, f"cannot be read ({error.strerror or error})") from None
    if len(data) > max_bytes:
        raise InputRefused(what, _too_large(f"more than {max_bytes}", max_bytes))
    return data


def decode_utf8(data: bytes, *, what: str, allow_bom: bool = True) -> str:
    """Strict UTF-8 (a leading byte-order mark dropped when ``allow_bom``)."""
    try:
        return data.decode("utf-8-sig" if allow_bom else "utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InputRefused(
            what,
            f"is not UTF-8 text (byte {error.start} on line {line} cannot be decoded); save it "
            "as UTF-8",
        ) from None


def read_text(path: str | os.PathLike[str], *, what: str, max_bytes: int) -> str:
    return decode_utf8(read_bytes(path, what=what, max_bytes=max_bytes), what=what)


class _Refusal(Exception):
    """Raised inside the JSON parser's hooks; becomes InputRefused outside it."""


def _number(text: str, convert: type[int] | type[float]) -> int | float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _Refusal(
            f"has a number {len(text)} characters long (the limit is {MAX_NUMBER_CHARS}); "
            "write it shorter"
        )
    return convert(text)


def _parse_int(text: str) -> int | float:
    return _number(text, int)


def _parse_float(text: str) -> int | float:
    return _number(text, float)


def _check_tree(value: Any, max_depth: int) -> None:
    """Depth and lone surrogates, walked without recursion (the input chooses the depth)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise _Refusal(
                    "has a lone surrogate escape (such as \\ud800) in a string, which is not "
                    "text; remove it"
                )
            continue
        if isinstance(item, dict):
            children: list[Any] = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > max_depth:
            raise _Refusal(f"nests arrays and objects deeper than {max_depth} levels; flatten it")
        stack.extend((child, depth + 1) for child in children)


def parse_json(text: str | bytes, *, what: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """One JSON value from ``text``, bounded in depth and number length (else InputRefused)."""
    if isinstance(text, bytes):
        text = decode_utf8(text, what=what)
    try:
        value = json.loads(
            text,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
        _check_tree(value, max_depth)
    except _Refusal as refusal:
        raise InputRefused(what, str(refusal)) from None
    except RecursionError:
        raise InputRefused(
            what, f"nests arrays and objects deeper than {max_depth} levels; flatten it"
        ) from None
    except json.JSONDecodeError as error:
        raise InputRefused(
            what,
            f"is not valid JSON (line {error.lineno} column {error.colno}: {error.msg})",
        ) from None
    return value


def read_json(path: str | os.PathLike[str], *, what: str, max_bytes: int) -> Any:
    """The JSON value in the regular file at ``path``, read and parsed within the bounds."""
    return parse_json(read_text(path, what=what, max_bytes=max_bytes), what=what)
