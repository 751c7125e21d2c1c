"""What every page reads alike, read again only when what it comes from has changed: the run
folders' sources, and the impact report of the lesson and impact pages.

The sources are keyed by :func:`~active_memory.ledger.sources.sources_stamp` (each file's path,
size, modification time and inode, found without reading any); the report by that stamp and the
store's generation, which every committed batch raises (a publication, a retirement, a purge,
a revert, an import). The report is the one ``lessons impact`` prints, measured by the same
function over the same inputs: a lesson's figures depend on every other lesson (cards compete
for a conversation's budget), so one lesson measured alone could differ from the command's.
A store that names no generation is measured on every request.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from active_memory.impact import ImpactReport, ImpactStore, LessonImpact, measure_sources
from active_memory.ledger import LedgerSources, store_sources
from active_memory.ledger.sources import FileStamp, sources_stamp

__all__ = ["SharedReads"]


@runtime_checkable
class _Generational(Protocol):
    def generation(self) -> int: ...


@dataclass(frozen=True, slots=True)
class _Measured:
    key: tuple[object, ...]
    report: ImpactReport
    by_id: Mapping[str, LessonImpact]


class SharedReads:
    """The sources of ``runs`` (and of the exposure files beside ``store_path``) and the impact
    report, each kept while its key holds; safe to share between request threads."""

    def __init__(self, runs: Sequence[Path], store_path: Path | None) -> None:
        self._runs, self._store_path = tuple(runs), store_path
        self._lock = threading.Lock()
        # One measurement at a time: requests arriving while it runs wait and reuse it.
        self._measuring = threading.Lock()
        self._sources: tuple[tuple[FileStamp, ...], LedgerSources] | None = None
        self._measured: _Measured | None = None

    def sources(self) -> LedgerSources:
        return self._sources_at(sources_stamp(self._runs, self._store_path))

    def _sources_at(self, stamp: tuple[FileStamp, ...]) -> LedgerSources:
        with self._lock:
            if self._sources is not None and self._sources[0] == stamp:
                return self._sources[1]
        # The stamp was taken before the read: a file changed meanwhile is read again next time.
        sources = store_sources(self._runs, self._store_path)
        with self._lock:
            self._sources = (stamp, sources)
        return sources

    def impact(
        self, store: ImpactStore, retired: Callable[[], Iterable[str]]
    ) -> tuple[ImpactReport, Mapping[str, LessonImpact]]:
        """The report over ``store`` (``retired``: the ids it measures beyond the live ones) and
        the runs, with its lessons by id."""
        # Read before the measurement: a batch committed meanwhile raises the generation
        # past this key, so the next request measures again.
        generation = store.generation() if isinstance(store, _Generational) else None
        stamp = sources_stamp(self._runs, self._store_path)
        key = (generation, self._store_identity(), stamp)
        with self._measuring:
            measured = self._measured
            if generation is not None and measured is not None and measured.key == key:
                return measured.report, measured.by_id
            report = measure_sources(store, self._sources_at(stamp), retired=list(retired()))
            by_id = {lesson.id: lesson for lesson in report.lessons}
            self._measured = _Measured(key, report, by_id)
        return report, by_id

    def _store_identity(self) -> tuple[int, int] | None:
        """The store file's device and inode: a file restored over it is another store, even
        at the same generation."""
        if self._store_path is None:
            return None
        try:
            info = os.stat(self._store_path)
        except OSError:
            return None
        return info.st_dev, info.st_ino
