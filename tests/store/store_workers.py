"""Subprocess entry points for store tests: racing publishers, a crashing writer, a busy writer.

Run as ``python store_workers.py <mode> …``; results go to a JSON file or stdout lines so the
parent test can check them against the store.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from active_memory.errors import RevisionConflict
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store import writes
from active_memory.store.backend import PublicationControl, RunIdentity, SnapshotRequest
from active_memory.store.sqlite import SqliteStore
from factories import REPOSITORY, make_draft

if TYPE_CHECKING:
    from active_memory.store.postgres import PostgresStore


def open_store(location: str) -> SqliteStore | PostgresStore:
    """A store file path, or ``<postgresql URL>|<tenant>`` (``Engine.location``).

    PostgresStore is imported only for a URL: psycopg's import was about half of a SQLite
    worker's CPU (0.13 of 0.27 CPU-s), and the SQLite tests start eleven such workers."""
    if "|" in location:
        from active_memory.store.postgres import PostgresStore

        url, tenant = location.split("|")
        return PostgresStore(url, tenant=tenant, pool_size=1, lock_timeout_ms=30_000)
    return SqliteStore(location, busy_timeout_ms=30_000)


def wait_for_go() -> None:
    """Say ``ready`` and block until the parent says ``go`` (``racing.release``): the parent
    releases every worker at once, when the slowest is ready."""
    print("ready", flush=True)
    sys.stdin.readline()


def race(store_path: str, worker: int, batches: int, out: str) -> None:
    """Snapshot, pick 1-3 shared lessons, upsert them at the revisions seen; record outcomes.

    Workers open the store, then start together (:func:`wait_for_go`) and pause briefly between
    snapshot and publish, so their read-decide-write windows really overlap.
    """
    rng = random.Random(worker)
    results: list[dict[str, Any]] = []
    request = SnapshotRequest(RunIdentity(f"worker-{worker}", repository=REPOSITORY))
    # The named screening opt-out: the race is over revisions, and the cards differ only in a
    # number. Screening (loading its patterns, then each card) was half of a worker's CPU after
    # its imports; the random pause below is what keeps the read-decide-write windows open.
    screened = PublicationControl(screened_by="admission")
    with open_store(store_path) as store:
        wait_for_go()
        for batch in range(batches):
            seen = store.snapshot(request).by_id()
            time.sleep(rng.uniform(0, 0.002))
            chosen = rng.sample(sorted(seen), rng.randint(1, 3))
            run_id = f"w{worker}-b{batch}"
            expected = {lesson_id: seen[lesson_id].revision for lesson_id in chosen}
            # The lesson's position, not its id: a ULID in a card reads as a random secret.
            mutations = tuple(
                Mutation(
                    op="upsert",
                    id=i,
                    expected_revision=rev,
                    draft=make_draft(f"{run_id} lesson {sorted(seen).index(i)}"),
                )
                for i, rev in expected.items()
            )
            try:
                receipt = store.publish(Publication(run_id=run_id, mutations=mutations), screened)
            except RevisionConflict as conflict:
                results.append(
                    {
                        "run_id": run_id,
                        "status": "conflict",
                        "expected": expected,
                        "mismatches": [[m.id, m.expected, m.found] for m in conflict.mismatches],
                    }
                )
            else:
                results.append(
                    {
                        "run_id": run_id,
                        "status": "committed",
                        "expected": expected,
                        "revisions": receipt.revisions,
                        "generation": receipt.generation,
                    }
                )
    Path(out).write_text(json.dumps(results))


def crash(store_path: str, count: int, kill_after: int) -> None:
    """Publish one large batch and SIGKILL this process after ``kill_after`` rows are written.

    ``kill_after`` 0 kills right after the batch committed instead.
    """
    with SqliteStore(store_path) as store:
        conn = store._conn
        assert conn is not None
        # A tiny page cache forces SQLite to spill uncommitted pages into the WAL mid-batch,
        # so the kill leaves real uncommitted frames behind, not just dirty memory.
        conn.execute("PRAGMA cache_size = 8")
        written = 0
        encode = writes.encode_draft

        def encode_then_maybe_die(draft: Any) -> Any:
            nonlocal written
            written += 1
            if written == kill_after:
                print("writing", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            return encode(draft)

        writes.encode_draft = encode_then_maybe_die  # type: ignore[assignment]
        mutations = tuple(
            Mutation(
                op="upsert",
                id=new_lesson_id(),
                expected_revision=0,
                draft=make_draft(f"bulk {n}", reason="x" * 400),
            )
            for n in range(count)
        )
        # The named screening opt-out: what is tested is the kill mid-write, and screening the
        # 1,000 cards (which store.check() in the parent screens again) was 80% of this
        # process's CPU. Screening happens before the first row is encoded, so the kill still
        # lands among the rows.
        store.publish(
            Publication(run_id="crash-run", mutations=mutations),
            PublicationControl(screened_by="admission"),
        )
        print("committed", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


def write_loop(store_path: str, stop: str) -> None:
    """Rewrite the same 20 lessons in every batch; print "ready" after the first commit and
    "committed <n>" after each later one, and go on until the file ``stop`` exists (the parent
    makes it once its backups are taken; after 60 s the loop ends on its own, so a parent that
    died leaves no writer behind).

    Every committed batch moves all 20 to the next revision, so a consistent copy holds 20
    lessons sharing one revision equal to the generation.
    """
    deadline = time.monotonic() + 60
    stopped = Path(stop)
    ids = [new_lesson_id() for _ in range(20)]
    with SqliteStore(store_path, busy_timeout_ms=30_000) as store:
        n = 0
        while time.monotonic() < deadline and not stopped.exists():
            mutations = tuple(
                Mutation(
                    op="upsert",
                    id=lesson_id,
                    expected_revision=n,
                    draft=make_draft(f"loop {n} lesson {position}"),
                )
                for position, lesson_id in enumerate(ids)
            )
            store.publish(Publication(run_id=f"loop-{n}", mutations=mutations))
            print("ready" if n == 0 else f"committed {n}", flush=True)
            n += 1
    print(f"done {n}", flush=True)


def open_fresh(store_path: str) -> None:
    """Open (and so create and migrate) a store at the same moment as other processes."""
    wait_for_go()
    with open_store(store_path) as store:
        print(store.generation(), flush=True)


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "race":
        race(args[0], int(args[1]), int(args[2]), args[3])
    elif mode == "crash":
        crash(args[0], int(args[1]), int(args[2]))
    elif mode == "open":
        open_fresh(args[0])
    elif mode == "write-loop":
        write_loop(args[0], args[1])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
