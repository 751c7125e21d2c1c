"""The run log: one JSON object per line, appended atomically, never any lesson text.

Each record is written with a single ``write`` on a descriptor opened with ``O_APPEND``, so
concurrent writers never interleave inside a line. The file is private (0600; an existing file
with wider permissions is narrowed) and symlinks are refused.

A crash mid-write can leave a torn last line: the next append starts a new line rather than
gluing its record onto it, and reading skips a torn line wherever it is and counts it
(:func:`read_run_log`).

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
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from active_memory.errors import RunLogError
from active_memory.models.changes import Rejection
from active_memory.private_files import make_private_dir

__all__ = ["ALLOWED_FIELDS", "MAX_LOG_BYTES", "LogValue", "RunLog", "RunLogRead", "read_events",
           "read_run_log"]  # fmt: skip

Scalar: TypeAlias = str | int | float | bool | None
LogValue: TypeAlias = Scalar | Sequence[Scalar]

ALLOWED_FIELDS = frozenset(
    {
        "accepted", "action", "adapted", "answer_max_tokens", "answered_model", "attempt",
        "batch", "batches", "cache_read_tokens", "cache_write_tokens", "code", "conflicts",
        "contract", "contract_sha256", "count", "deadline_ms", "deferred", "downgraded",
        "dry_run", "duration_ms", "effort", "error_code", "execution", "fingerprint",
        "generation", "host", "id", "ids", "index", "input_tokens", "investigation_max_tokens",
        "keep_ids", "kept", "lane", "model", "mutations", "node_id", "outcome", "output_tokens",
        "prompt_sha256", "proposed", "provider", "published", "quarantined", "reason_code",
        "rejected", "retired", "retries", "revision", "role", "run_id", "signals", "source_commit",
        "stage", "status", "text_calls", "time_ms", "truncated",
    }
)  # fmt: skip
_TOKEN = re.compile(r"[A-Za-z0-9_.:@/+=-]{0,200}")
_MAX_LIST = 256
_MAX_LINE_BYTES = 64 * 1024
# What one read takes in: years of postmortems at a few KiB each.
MAX_LOG_BYTES = 256 * 1024 * 1024


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
        # The whole rejection: it never carries lesson text (and the allow-list still applies).
        # Role first, as the record is documented (docs/admission.md).
        return self.append_event(
            "rejection",
            run_id=run_id,
            role=rejection.role,
            **rejection.model_dump(exclude={"role"}),
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
        # Read and write: appending checks the last byte for a line a crash tore. Non-blocking:
        # a FIFO swapped in for the log fails the fstat below instead of waiting for ever.
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
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
            if info.st_size and os.pread(fd, 1, info.st_size - 1) != b"\n":
                # A crash tore the last line: start a new one rather than glue onto it.
                data = b"\n" + data
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError as exc:
            raise RunLogError(
                f"cannot append to run log {str(self.path)!r}: {exc.strerror}"
            ) from exc
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class RunLogRead:
    """The complete records of a run log and how many torn lines were skipped."""

    records: tuple[dict[str, LogValue], ...]
    torn: int


def read_run_log(path: str | os.PathLike[str]) -> RunLogRead:
    """Every complete record of a run log, in order; a line that is not a JSON object (torn by
    a crash, anywhere in the file) is skipped and counted. A missing file has no records."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_LOG_BYTES + 1)
    except FileNotFoundError:
        return RunLogRead((), 0)
    except OSError as exc:
        raise RunLogError(f"cannot read run log {os.fspath(path)!r}: {exc.strerror}") from exc
    if len(data) > MAX_LOG_BYTES:
        raise RunLogError(
            f"run log {os.fspath(path)!r} is larger than {MAX_LOG_BYTES} bytes; split it"
        )
    records: list[dict[str, LogValue]] = []
    torn = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            torn += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            torn += 1
    return RunLogRead(tuple(records), torn)


def read_events(path: str | os.PathLike[str]) -> tuple[dict[str, LogValue], ...]:
    """Every complete record of a run log; torn lines are skipped (see :func:`read_run_log`)."""
    return read_run_log(path).records
