"""The run log: one JSON object per line, appended atomically, never any lesson text.

Each record is written with a single ``write`` on a descriptor opened with ``O_APPEND``, so
concurrent writers never interleave inside a line. The file is private (0600; an existing file
with wider permissions is narrowed) and symlinks are refused.

Lesson text cannot slip in by construction: field names come from an allow-list, and string
values must be short tokens without whitespace (ids, codes, stage and role names, hashes), so a
title or recommendation is refused even under an allowed name.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

from active_memory.errors import RunLogError
from active_memory.models.changes import Rejection
from active_memory.private_files import make_private_dir

__all__ = ["ALLOWED_FIELDS", "LogValue", "RunLog", "read_events"]

Scalar: TypeAlias = str | int | float | bool | None
LogValue: TypeAlias = Scalar | Sequence[Scalar]

ALLOWED_FIELDS = frozenset(
    {
        "accepted", "action", "adapted", "attempt", "batch", "batches", "code", "conflicts",
        "contract", "contract_sha256", "count", "deadline_ms", "deferred", "downgraded",
        "duration_ms", "effort", "error_code", "execution", "fingerprint", "generation", "host",
        "id", "ids", "index", "input_tokens", "kept", "lane", "model", "mutations", "node_id",
        "outcome", "output_tokens", "proposed", "provider", "published", "quarantined",
        "reason_code", "rejected", "retired", "retries", "revision", "role", "run_id", "signals",
        "source_commit", "stage", "status", "time_ms", "truncated",
    }
)  # fmt: skip
_TOKEN = re.compile(r"[A-Za-z0-9_.:@/+=-]{0,200}")
_MAX_LIST = 256
_MAX_LINE_BYTES = 64 * 1024


def _check_scalar(name: str, value: object) -> None:
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RunLogError(f"run log field {name!r} must be a finite number, got {value!r}")
        return
    if isinstance(value, str):
        if not _TOKEN.fullmatch(value):
            # Do not echo the value: it may be exactly the text the log must never hold.
            raise RunLogError(
                f"run log field {name!r} must be a short token without spaces "
                f"(an id, code or name of at most 200 characters); got {len(value)} characters"
            )
        return
    raise RunLogError(f"run log field {name!r} has unsupported type {type(value).__name__}")


def _check_fields(fields: Mapping[str, object]) -> None:
    unknown = sorted(set(fields) - ALLOWED_FIELDS)
    if unknown:
        allowed = ", ".join(sorted(ALLOWED_FIELDS))
        raise RunLogError(f"run log field(s) {unknown} are not allowed; allowed: {allowed}")
    for name, value in fields.items():
        if isinstance(value, (list, tuple)):
            if len(value) > _MAX_LIST:
                raise RunLogError(f"run log field {name!r} has more than {_MAX_LIST} items")
            for item in value:
                _check_scalar(name, item)
        else:
            _check_scalar(name, value)


class RunLog:
    """Appends records to one JSONL file (created 0600, parent folders 0700)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append_event(self, kind: str, **fields: LogValue) -> dict[str, LogValue]:
        """Append ``{"event": kind, **fields}`` (``time_ms`` added when absent); return it."""
        _check_scalar("event", kind)
        if not kind:
            raise RunLogError("run log event kind must not be empty")
        _check_fields(fields)
        record: dict[str, LogValue] = {"event": kind, **fields}
        record.setdefault("time_ms", int(time.time() * 1000))
        self._write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
        return record

    def append_rejection(
        self, run_id: str, rejection: Rejection, *, time_ms: int | None = None
    ) -> dict[str, LogValue]:
        return self.append_event(
            "rejection",
            run_id=run_id,
            role=rejection.role,
            stage=rejection.stage,
            code=rejection.code,
            index=rejection.index,
            id=rejection.id,
            time_ms=int(time.time() * 1000) if time_ms is None else time_ms,
        )

    def append_rejections(
        self, run_id: str, rejections: Iterable[Rejection], *, time_ms: int | None = None
    ) -> int:
        count = 0
        for rejection in rejections:
            self.append_rejection(run_id, rejection, time_ms=time_ms)
            count += 1
        return count

    def _write(self, line: str) -> None:
        data = line.encode("utf-8")
        if len(data) > _MAX_LINE_BYTES:
            raise RunLogError(
                f"run log record is {len(data)} bytes; the limit is {_MAX_LINE_BYTES}"
            )
        # Non-blocking: a FIFO swapped in for the log fails the open (no reader) or the fstat
        # below, instead of waiting for a reader for ever. Regular files ignore the flag.
        flags = (
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        )
        try:
            # Never tightened: the log may sit in the user's working directory.
            make_private_dir(self.path.parent, tighten=False)
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            hints = {errno.ELOOP: " (it is a symlink)", errno.ENXIO: " (it is a FIFO)"}
            hint = hints.get(exc.errno or 0, "")
            raise RunLogError(
                f"cannot open run log {str(self.path)!r}{hint}: {exc.strerror}"
            ) from exc
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise RunLogError(f"run log {str(self.path)!r} is not a regular file")
            if info.st_mode & 0o077:
                os.fchmod(fd, 0o600)
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError as exc:
            raise RunLogError(
                f"cannot append to run log {str(self.path)!r}: {exc.strerror}"
            ) from exc
        finally:
            os.close(fd)


def read_events(path: str | os.PathLike[str]) -> tuple[dict[str, LogValue], ...]:
    """Every complete record of a run log; a torn final line (a crash mid-write) is skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise RunLogError(f"cannot read run log {os.fspath(path)!r}: {exc.strerror}") from exc
    # The text after the last newline is empty, or a torn final line from a crash mid-write.
    complete = text.split("\n")[:-1]
    records: list[dict[str, LogValue]] = []
    for number, line in enumerate(complete, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RunLogError(
                f"run log {os.fspath(path)!r} line {number} is not JSON ({exc.msg})"
            ) from exc
        if not isinstance(record, dict):
            raise RunLogError(f"run log {os.fspath(path)!r} line {number} is not a JSON object")
        records.append(record)
    return tuple(records)
