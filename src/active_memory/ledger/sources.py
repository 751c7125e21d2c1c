"""Where a ledger's facts come from: the run records, run logs, latched outcomes, postmortem
reports and exposure files found under the folders a user names.

:func:`load_sources` walks each folder (not following symlinks, at most :data:`MAX_DEPTH`
levels and :data:`MAX_ENTRIES` entries, so a home folder given by mistake ends quickly) and
takes, by file name:

* ``run.json``: a run record (deliveries, receipts, its outcome); the recorded checkout and
  transcripts below it are not read;
* ``*.jsonl`` whose name contains ``run-log`` or ``runlog``: a run log (postmortem events,
  rejections by stage and code, quarantine holds);
* ``outcome.json``: a latched outcome (written by the host before its postmortem);
* ``report.json`` or ``*.report.json``: a postmortem report (``postmortem RUN --json``).

A file that cannot be read or parsed is skipped and named in :attr:`LedgerSources.skipped`
with the reason: a ledger shows what it could read and says what it could not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from active_memory.bounded_input import read_json, read_text
from active_memory.errors import ActiveMemoryError
from active_memory.latch import LATCH_FILE, read_latched_outcome
from active_memory.models.runs import RUN_FILE, RunRecord, load_run_record
from active_memory.runlog import LogValue, read_run_log

__all__ = [
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "ExposureRecord",
    "LedgerSources",
    "ReportChange",
    "ReportDowngrade",
    "ReportSpecialist",
    "ReportSummary",
    "load_exposures",
    "load_sources",
    "sources_stamp",
    "store_sources",
]

MAX_DEPTH = 6
MAX_ENTRIES = 20_000
_MAX_REPORT_BYTES = 16 * 1024 * 1024
_MAX_EXPOSURE_BYTES = 1024 * 1024
_SKIPPED_DIRS = frozenset({"checkout", "transcripts", "evidence", ".git", "node_modules"})
_KEY = re.compile(r"(lesson-[0-9A-HJKMNP-TV-Z]{26})@([1-9][0-9]{0,9})")


class _Loose(BaseModel):
    # A report is read for a few fields; whatever else it holds (totals, notes) is ignored.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReportDowngrade(_Loose):
    id: str
    action: str


class ReportSpecialist(_Loose):
    """``decisions``: its applied actions counted by keep/adapt/retire/defer. ``keep_ids``: every
    id the specialist kept, when the postmortem recorded them (older
    reports count keeps only; the ledger then infers them)."""

    specialist: str
    status: str
    decisions: dict[str, int] = {}
    downgrades: tuple[ReportDowngrade, ...] = ()
    keep_ids: tuple[str, ...] | None = None


class ReportChange(_Loose):
    op: str
    id: str
    specialist: str
    revision: int | None = None


class ReportSummary(_Loose):
    """The parts of a postmortem report (its JSON form) a ledger and the runs page read."""

    run_id: str
    status: str
    reason: str | None = None
    dry_run: bool = False
    generation_before: int | None = None
    generation_after: int | None = None
    specialists: tuple[ReportSpecialist, ...] = ()
    changes: tuple[ReportChange, ...] = ()


@dataclass(frozen=True, slots=True)
class ExposureRecord:
    """One conversation's exposure file: the ``(id, revision)`` pairs handed over in it."""

    name: str
    keys: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class LedgerSources:
    """Everything read: run records, run-log records (in file order), latched outcomes by run
    id, reports, exposure files and the files skipped with why."""

    records: tuple[RunRecord, ...] = ()
    log_records: tuple[dict[str, LogValue], ...] = ()
    outcomes: dict[str, str] = field(default_factory=dict)
    reports: tuple[ReportSummary, ...] = ()
    exposures: tuple[ExposureRecord, ...] = ()
    skipped: tuple[str, ...] = ()
    report_files: tuple[tuple[str, ReportSummary], ...] = ()


def _walk(root: Path) -> Iterable[Path]:
    """Regular files under ``root`` (or ``root`` itself), bounded in depth and entries."""
    if root.is_file() and not root.is_symlink():
        yield root
        return
    seen = 0
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if depth < MAX_DEPTH and entry.name not in _SKIPPED_DIRS:
                    stack.append((Path(entry.path), depth + 1))
            elif entry.is_file():
                yield Path(entry.path)


def _kind(path: Path) -> str | None:
    name = path.name
    if name == RUN_FILE:
        return "record"
    if name == LATCH_FILE:
        return "outcome"
    if name.endswith(".jsonl") and ("run-log" in name or "runlog" in name):
        return "log"
    if name == "report.json" or name.endswith(".report.json"):
        return "report"
    return None


def _latched(path: Path) -> tuple[str, str]:
    outcome = read_latched_outcome(path.parent)
    data = read_json(path, what=f"latched outcome {str(path)!r}", max_bytes=64 * 1024)
    run_id = data.get("run_id") if isinstance(data, dict) else None
    if outcome is None or not isinstance(run_id, str):
        raise ValueError("it names no run id and outcome")
    return run_id, outcome.status


def load_sources(paths: Sequence[str | os.PathLike[str]]) -> LedgerSources:
    """Read every run record, run log, latched outcome and report under ``paths``."""
    records: dict[str, RunRecord] = {}
    logs: list[dict[str, LogValue]] = []
    outcomes: dict[str, str] = {}
    reports: list[tuple[str, ReportSummary]] = []
    skipped: list[str] = []
    for given in paths:
        for path in _walk(Path(given)):
            kind = _kind(path)
            if kind is None:
                continue
            try:
                if kind == "record":
                    record = load_run_record(path.parent)
                    records.setdefault(record.run_id, record)
                elif kind == "log":
                    logs.extend(read_run_log(path).records)
                elif kind == "outcome":
                    run_id, status = _latched(path)
                    outcomes[run_id] = status
                else:
                    text = read_text(
                        path, what=f"report {str(path)!r}", max_bytes=_MAX_REPORT_BYTES
                    )
                    reports.append((str(path), ReportSummary.model_validate_json(text)))
            except (ActiveMemoryError, OSError, ValueError, ValidationError) as error:
                reason = str(error).splitlines()[0] if str(error) else type(error).__name__
                skipped.append(f"{path}: {reason[:200]}")
    return LedgerSources(
        records=tuple(records[run_id] for run_id in sorted(records)),
        log_records=tuple(logs),
        outcomes=outcomes,
        reports=tuple(report for _, report in reports),
        skipped=tuple(skipped),
        report_files=tuple(reports),
    )


def load_exposures(store_dir: str | os.PathLike[str]) -> tuple[ExposureRecord, ...]:
    """The exposure files beside a local store (``<store folder>/exposure/*.keys``): only this
    user's private folder is read (what the hooks trust), each file up to 1 MiB."""
    folder = Path(store_dir) / "exposure"
    try:
        info = folder.lstat()
    except OSError:
        return ()
    if not folder.is_dir() or folder.is_symlink() or info.st_uid != os.getuid():
        return ()
    found: list[ExposureRecord] = []
    for path in sorted(folder.glob("*.keys")):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            text = read_text(path, what="exposure file", max_bytes=_MAX_EXPOSURE_BYTES)
        except (ActiveMemoryError, OSError):
            continue
        keys = []
        for line in text.splitlines():
            match = _KEY.fullmatch(line.strip())
            if match:
                keys.append((match.group(1), int(match.group(2))))
        found.append(ExposureRecord(path.stem, tuple(keys)))
    return tuple(found)


def _folders(
    runs: Sequence[str | os.PathLike[str]], store_path: str | os.PathLike[str] | None
) -> list[Path]:
    """The folders a ledger of one store reads: ``runs``, or the ``runs`` folder beside a local
    store, where a host keeps each run's state."""
    folders = [Path(run) for run in runs]
    if not folders and store_path is not None and (Path(store_path).parent / "runs").is_dir():
        folders.append(Path(store_path).parent / "runs")
    return folders


# (path, size, modification time in ns, inode) of each file read
FileStamp = tuple[str, int, int, int]


def sources_stamp(
    runs: Sequence[str | os.PathLike[str]], store_path: str | os.PathLike[str] | None
) -> tuple[FileStamp, ...]:
    """What :func:`store_sources` would read, as each file's path, size, modification time and
    inode, without reading any: equal stamps, equal sources (a run's files are replaced or
    appended to, never rewritten in place at the same size within the same nanosecond)."""
    found: list[FileStamp] = []
    paths = [p for folder in _folders(runs, store_path) for p in _walk(folder) if _kind(p)]
    if store_path is not None:
        paths += sorted((Path(store_path).parent / "exposure").glob("*.keys"))
    for path in paths:
        try:
            info = path.stat()
        except OSError:
            continue  # gone: its absence is the stamp
        found.append((str(path), info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(found)


def store_sources(
    runs: Sequence[str | os.PathLike[str]], store_path: str | os.PathLike[str] | None
) -> LedgerSources:
    """What a ledger of one store reads: ``runs`` (default: the ``runs`` folder beside a local
    store, where a host keeps each run's state) and, for a local store, its exposure files."""
    sources = load_sources(_folders(runs, store_path))
    if store_path is None:
        return sources
    return LedgerSources(
        records=sources.records,
        log_records=sources.log_records,
        outcomes=sources.outcomes,
        reports=sources.reports,
        exposures=load_exposures(Path(store_path).parent),
        skipped=sources.skipped,
        report_files=sources.report_files,
    )
