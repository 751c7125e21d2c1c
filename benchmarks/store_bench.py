"""Lesson store benchmark: snapshot latency and publication throughput at 10,000 live lessons.

Run: ``python benchmarks/store_bench.py`` (``--help`` for sizes). Every figure is a median over
repeats, with p99 where there are enough samples, next to a baseline measured in the same run
on the same disk with the same pragmas (WAL, synchronous=FULL):

* snapshot baseline: a raw ``SELECT`` of the same rows without decoding or validation. A
  snapshot reads the rows and verifies each against its stored checksum; its lessons are
  decoded (validated by pydantic from their JSON) on first access. It is timed by a store
  instance that has read these rows before (a broker's steady state) and by a fresh instance,
  each alone and followed by decoding every lesson, so the price of materialising all 10,000
  models is printed too; last, labelled a floor, the raw SELECT followed by ``json.loads`` of
  both JSON columns of every row, taken in turn with the SELECT: what any decoding costs at
  least, without validating or building anything;
* publication baseline: a raw sqlite3 loop that updates the same number of rows per
  transaction with prepared JSON, without revision checks, history or capacity checks. Each
  batch size is published twice: with drafts a host screened on its own path
  (``PublicationControl(screened_by="admission")``, as the postmortem publishes: the store's
  own work) and with drafts the store screens before its transaction (a direct caller). The
  three take turns, batch after batch, so a busy disk or machine weighs on each alike; wall
  and CPU time are both printed (the commit's fsync is wall time only). A further pass of
  host-screened batches, timed apart, splits a publication into the time inside SQLite's calls
  (the schema's work: the row, its history row, the search text and their indexes and
  triggers, and the commit) and the rest (Python: encoding, checksums, plans).

Targets: a snapshot of 10,000 lessons in at most 100 ms and 5x the raw SELECT (issue 10);
publication (the store's own path) at most 1.5x the raw UPDATE for a batch of 1 and 3x for a
batch of 100, a snapshot with every lesson decoded by a fresh instance at most 5x the raw
SELECT (issue 33; ``ratio_figures`` gives these to ``hot_paths.py``).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.store.backend import PublicationControl, RunIdentity, SnapshotRequest
from active_memory.store.codec import encode_draft
from active_memory.store.sql import SqliteConnection
from active_memory.store.sqlite import SqliteStore

REPOSITORY = "forge:example.com/acme/app"


def draft(n: int, version: int = 0) -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(
            repository=REPOSITORY,
            files=(f"src/module_{n % 500}/file_{n}.py",),
            identifiers=(f"handler_{n}",),
            keyword_groups=(("retry", f"topic{n % 97}"),),
        ),
        title=f"Lesson {n} (v{version}) about the retry handler",
        recommendation=(
            "Call the retry wrapper with an explicit deadline; the default waits forever and "
            f"hides timeouts in module {n % 500}."
        ),
        evidence=Evidence(run_id=f"bench-{version}", references=("exec:e1",), reason="bench"),
    )


def timed(action: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return samples


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def fill(store: SqliteStore, count: int) -> list[str]:
    ids = sorted(new_lesson_id() for _ in range(count))
    for start in range(0, count, 1000):
        chunk = ids[start : start + 1000]
        mutations = tuple(
            Mutation(op="upsert", id=i, expected_revision=0, draft=draft(start + k))
            for k, i in enumerate(chunk)
        )
        store.publish(Publication(run_id="bench-fill", mutations=mutations))
    return ids


REQUEST = SnapshotRequest(RunIdentity("bench", repository=REPOSITORY))
# Not a snapshot: what any decoding of the rows costs at least, printed beside the snapshots.
FLOOR = "floor: raw SELECT + json.loads of both columns"


def snapshot_decoded(store: SqliteStore) -> None:
    tuple(store.snapshot(REQUEST).lessons)


def bench_snapshot(
    store: SqliteStore, repeats: int
) -> tuple[list[float], list[float], list[float], list[float], int]:
    """Snapshots by an instance that read the rows before, alone and with every lesson decoded;
    the raw SELECT; and the floor of any decoding: that SELECT, then ``json.loads`` of both
    JSON columns of every row (no validation, no model)."""
    size = len(store.snapshot(REQUEST).lessons)
    snapshot_decoded(store)
    ours = timed(lambda: store.snapshot(REQUEST), repeats)
    decoded = timed(lambda: snapshot_decoded(store), repeats)
    raw = sqlite3.connect(f"{store.path.as_uri()}?mode=ro", uri=True)

    def baseline() -> list[tuple[object, ...]]:
        return raw.execute(
            "SELECT id, revision, body, evidence FROM records "
            "WHERE kind = 'repository' AND deleted = 0 AND repository = ?",
            (REPOSITORY,),
        ).fetchall()

    def parsed() -> None:
        loads = json.loads
        [(loads(body), loads(evidence)) for _, _, body, evidence in baseline()]

    base, floor = [], []
    for _ in range(repeats):  # in turn, so that the machine's load weighs on both alike
        base += timed(baseline, 1)
        floor += timed(parsed, 1)
    raw.close()
    return ours, decoded, base, floor, size


def bench_cold_snapshot(path: Path, repeats: int, *, decode: bool) -> list[float]:
    """The first snapshot of a freshly opened store, with or without decoding every lesson."""
    samples = []
    for _ in range(repeats):
        with SqliteStore(path, read_only=True) as fresh:
            start = time.perf_counter()
            if decode:
                snapshot_decoded(fresh)
            else:
                fresh.snapshot(REQUEST)
            samples.append(time.perf_counter() - start)
    return samples


class RawTable:
    """The publication baseline: a plain table of the same bodies, updated with prepared JSON,
    without revision checks, history, search text or capacity checks."""

    def __init__(self, folder: Path, count: int) -> None:
        self.conn = sqlite3.connect(folder / "baseline.sqlite3", isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, revision INT, body TEXT)"
        )
        self.encoded = [encode_draft(draft(n)).body for n in range(count)]
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT OR REPLACE INTO t VALUES (?, 1, ?)",
            [(str(n), e) for n, e in enumerate(self.encoded)],
        )
        self.conn.execute("COMMIT")
        self.cursor = 0

    def rows(self, batch: int) -> list[tuple[str, str]]:
        count = len(self.encoded)
        picked = [(self.cursor + k) % count for k in range(batch)]
        self.cursor += batch
        return [(self.encoded[n], str(n)) for n in picked]

    def update(self, rows: list[tuple[str, str]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany("UPDATE t SET body = ?, revision = revision + 1 WHERE id = ?", rows)
        self.conn.execute("COMMIT")


# What a host that screened every draft on its own path passes (the postmortem: admission
# screened them): the store's own publication path, without the screen.
ADMITTED = PublicationControl(screened_by="admission")
# (label, control) of the publications timed beside the raw UPDATE.
PUBLISHERS = (("host", ADMITTED), ("store", None))


def bench_publication(
    store: SqliteStore, raw: RawTable, ids: list[str], batch: int, batches: int
) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each batch: ``raw``, ``host`` (drafts screened by the host) and
    ``store`` (screened by the store), taken in turn batch after batch, so that the disk's and
    the machine's other load weigh on the three alike."""
    revisions = {lesson.id: lesson.revision for lesson in store.list_lessons()}
    cursor = 0
    samples: dict[str, list[tuple[float, float]]] = {"raw": [], "host": [], "store": []}
    for b in range(batches):
        rows = raw.rows(batch)
        wall, cpu = time.perf_counter(), time.process_time()
        raw.update(rows)
        samples["raw"].append((time.perf_counter() - wall, time.process_time() - cpu))
        for label, control in PUBLISHERS:
            chosen = [ids[(cursor + k) % len(ids)] for k in range(batch)]
            cursor += batch
            mutations = tuple(
                Mutation(op="upsert", id=i, expected_revision=revisions[i],
                         draft=draft(n, b + 1))
                for n, i in enumerate(chosen)
            )  # fmt: skip
            publication = Publication(run_id=f"bench-{batch}-{b}-{label}", mutations=mutations)
            wall, cpu = time.perf_counter(), time.process_time()
            receipt = store.publish(publication, control)
            samples[label].append((time.perf_counter() - wall, time.process_time() - cpu))
            revisions.update(receipt.revisions)
    return samples


class SqliteClock:
    """Wall and CPU time spent inside SQLite's ``execute`` and ``executemany`` (the commit and
    its fsync included; rows fetched from a cursor afterwards are not: a publication fetches a
    few) on the store's connection class while it is entered: the share of a publication that
    is the schema's work (rows, history, search text, indexes, triggers) rather than Python's.
    A pass of its own, so the wrapper costs nothing to the timed figures."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        # The class's own attribute of each name, None where it inherits sqlite3.Connection's:
        # the wrapper calls what the store calls, and leaving puts back exactly what was there.
        self._saved: dict[str, object | None] = {}

    def __enter__(self) -> SqliteClock:
        for name in ("execute", "executemany"):
            self._saved[name] = vars(SqliteConnection).get(name)
            method = getattr(SqliteConnection, name)

            def timed_call(conn: object, *args: object, _method: Any = method) -> object:
                wall, cpu = time.perf_counter(), time.process_time()
                try:
                    return _method(conn, *args)
                finally:
                    self.wall += time.perf_counter() - wall
                    self.cpu += time.process_time() - cpu

            setattr(SqliteConnection, name, timed_call)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, own in self._saved.items():
            if own is None:
                delattr(SqliteConnection, name)  # back to sqlite3.Connection's own
            else:
                setattr(SqliteConnection, name, own)


def bench_sqlite_share(
    store: SqliteStore, ids: list[str], batch: int, batches: int
) -> list[tuple[float, float, float, float]]:
    """(whole, inside SQLite) wall seconds, then the same in CPU seconds, of ``batches``
    host-screened publications."""
    revisions = {lesson.id: lesson.revision for lesson in store.list_lessons()}
    samples = []
    with SqliteClock() as clock:
        for b in range(batches):
            chosen = [ids[(b * batch + k) % len(ids)] for k in range(batch)]
            mutations = tuple(
                Mutation(op="upsert", id=i, expected_revision=revisions[i],
                         draft=draft(n, 10_000 + b))
                for n, i in enumerate(chosen)
            )  # fmt: skip
            publication = Publication(run_id=f"bench-share-{batch}-{b}", mutations=mutations)
            clock.wall = clock.cpu = 0.0
            wall, cpu = time.perf_counter(), time.process_time()
            receipt = store.publish(publication, ADMITTED)
            samples.append((time.perf_counter() - wall, clock.wall,
                            time.process_time() - cpu, clock.cpu))  # fmt: skip
            revisions.update(receipt.revisions)
    return samples


@dataclass
class Measured:
    """Every sample of one run; ``publication[batch]`` is ``bench_publication``'s, and
    ``sqlite_share[batch]`` is ``bench_sqlite_share``'s."""

    lessons: int
    fill_s: float
    size: int
    snapshot: dict[str, list[float]]
    base: list[float]
    publication: dict[int, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)
    sqlite_share: dict[int, list[tuple[float, float, float, float]]] = field(default_factory=dict)
    generation: int = 0
    file_bytes: int = 0


def measure(
    lessons: int, snapshot_repeats: int, cold_repeats: int, batches: int, big_batches: int
) -> Measured:
    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        folder = Path(tmp)
        with SqliteStore(folder / "state" / "lessons.sqlite3") as store:
            start = time.perf_counter()
            ids = fill(store, lessons)
            fill_s = time.perf_counter() - start
            ours, decoded, base, floor, size = bench_snapshot(store, snapshot_repeats)
            snapshot = {
                "snapshot, instance that read the rows before": ours,
                "snapshot, fresh instance": bench_cold_snapshot(
                    store.path, cold_repeats, decode=False
                ),
                "snapshot + every lesson decoded, read before": decoded,
                "snapshot + every lesson decoded, fresh": bench_cold_snapshot(
                    store.path, cold_repeats, decode=True
                ),
                FLOOR: floor,
            }
            measured = Measured(lessons, fill_s, size, snapshot, base)
            raw = RawTable(folder, lessons)
            for batch, count in ((1, batches), (100, big_batches)):
                measured.publication[batch] = bench_publication(store, raw, ids, batch, count)
                measured.sqlite_share[batch] = bench_sqlite_share(store, ids, batch, count)
            raw.conn.close()
            check = store.check()
            measured.generation, measured.file_bytes = check.generation, check.file_bytes
    return measured


def _median(samples: list[tuple[float, float]], column: int) -> float:
    return statistics.median(sample[column] for sample in samples)


def ratios(measured: Measured) -> dict[str, float]:
    """Medians over the same run's raw baseline: the publication figures of issue 33 (the
    store's own path, as a host that screened its drafts publishes), the same in CPU time and
    the same screened by the store, and the fresh snapshot with every lesson decoded."""
    figures = {}
    for batch, samples in measured.publication.items():
        raw, raw_cpu = _median(samples["raw"], 0), _median(samples["raw"], 1)
        figures[f"publish {batch}"] = _median(samples["host"], 0) / raw
        figures[f"publish {batch} cpu"] = _median(samples["host"], 1) / raw_cpu
        figures[f"publish {batch} screened"] = _median(samples["store"], 0) / raw
    raw = statistics.median(measured.base)
    fresh = measured.snapshot["snapshot, fresh instance"]
    figures["snapshot fresh"] = statistics.median(fresh) / raw
    figures["snapshot fresh ms"] = statistics.median(fresh) * 1000
    decoded = measured.snapshot["snapshot + every lesson decoded, fresh"]
    figures["snapshot decoded fresh"] = statistics.median(decoded) / raw
    figures["decoding floor"] = statistics.median(measured.snapshot[FLOOR]) / raw
    return figures


def ratio_figures(quick: bool = False) -> dict[str, float]:
    """``ratios`` of a run at 10,000 lessons (fewer repeats with ``quick``), for
    ``hot_paths.py``: keys ``publish 1``, ``publish 100``, their ``cpu`` and ``screened``
    variants, ``snapshot fresh`` (and its ``ms``), ``snapshot decoded fresh`` and its
    ``decoding floor``."""
    if quick:
        return ratios(measure(10_000, 5, 3, 60, 10))
    return ratios(measure(10_000, 15, 7, 200, 30))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--snapshot-repeats", type=int, default=15)
    parser.add_argument("--cold-repeats", type=int, default=7, help="fresh-instance snapshots")
    parser.add_argument("--batches", type=int, default=200, help="batches of size 1")
    parser.add_argument("--big-batches", type=int, default=30, help="batches of size 100")
    args = parser.parse_args()
    measured = measure(
        args.lessons, args.snapshot_repeats, args.cold_repeats, args.batches, args.big_batches
    )
    print(
        f"store benchmark: {args.lessons} live lessons, SQLite {sqlite3.sqlite_version}, "
        f"Python {sys.version.split()[0]}"
    )
    print(f"fill: {args.lessons} lessons in {measured.fill_s:.2f} s (batches of 1000)")
    print(f"final store: generation {measured.generation}, {measured.file_bytes / 2**20:.1f} MiB")
    print()
    raw = statistics.median(measured.base)
    print(
        f"snapshot of {measured.size} lessons (medians; raw SELECT baseline {raw * 1000:.1f} ms):"
    )
    for label, samples in measured.snapshot.items():
        med = statistics.median(samples)
        print(
            f"  {label:46} {med * 1000:7.1f} ms  p99 {p99(samples) * 1000:7.1f} ms  "
            f"{med / raw:5.1f}x raw"
        )
    first = statistics.median(measured.snapshot["snapshot, fresh instance"])
    met = "met" if first <= 0.100 and first / raw <= 5 else "missed"
    print(f"  target <= 100 ms and <= 5x raw (snapshot, fresh instance): {met}")
    print()
    labels = {
        "host": "publish, drafts screened by the host",
        "store": "publish, drafts screened by the store",
        "raw": "raw UPDATE (baseline)",
    }
    for batch, samples in measured.publication.items():
        print(f"publication, batch size {batch} ({len(samples['raw'])} batches each, taken in "
              "turn; medians, wall and CPU time):")  # fmt: skip
        raw, raw_cpu = _median(samples["raw"], 0), _median(samples["raw"], 1)
        for kind, label in labels.items():
            wall, cpu = _median(samples[kind], 0), _median(samples[kind], 1)
            walls = [sample[0] for sample in samples[kind]]
            print(
                f"  {label:38} {wall * 1000:7.2f} ms  p99 {p99(walls) * 1000:7.2f} ms  "
                f"{batch / wall:7.0f} mutations/s  {wall / raw:5.1f}x raw; "
                f"CPU {cpu * 1000:6.2f} ms  {cpu / raw_cpu:5.1f}x raw"
            )
        share = measured.sqlite_share[batch]
        print(f"  where a host-screened publication's time goes ({len(share)} more batches, timed "
              "apart; medians of each part):")  # fmt: skip
        for column, clock, base in ((0, "wall", raw), (2, "CPU", raw_cpu)):
            inside = statistics.median(sample[column + 1] for sample in share)
            python = statistics.median(sample[column] - sample[column + 1] for sample in share)
            print(
                f"    {clock:4}: in SQLite's execute calls (statements, commit) "
                f"{inside * 1000:6.2f} ms {inside / base:5.1f}x raw; the rest (Python, rows "
                f"fetched included) {python * 1000:6.2f} ms {python / base:5.1f}x raw"
            )
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
