"""Real processes racing on shared lessons, a writer killed mid-batch, a backup under load."""

from __future__ import annotations

import json
import signal
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest
from engines import Engine
from racing import release, spawn

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.migrations import MIGRATIONS
from active_memory.store.sqlite import SqliteStore
from factories import make_draft

PROCESSES = 4
BATCHES = 60
SHARED = 6


@pytest.mark.timeout(60)
def test_racing_processes_lose_no_update(engine: Engine, tmp_path: Path) -> None:
    ids = sorted(new_lesson_id() for _ in range(SHARED))
    with engine.open() as store:
        store.publish(
            Publication(
                run_id="seed",
                mutations=tuple(
                    Mutation(op="upsert", id=i, expected_revision=0, draft=make_draft())
                    for i in ids
                ),
            )
        )
    outputs = [tmp_path / f"worker-{n}.json" for n in range(PROCESSES)]
    workers = [
        spawn("race", engine.location(), str(n), str(BATCHES), str(out))
        for n, out in enumerate(outputs)
    ]
    release(workers)  # every worker has started and opened the store
    for worker in workers:
        _, stderr = worker.communicate(timeout=50)
        assert worker.returncode == 0, stderr
    results = [r for out in outputs for r in json.loads(out.read_text())]
    committed = [r for r in results if r["status"] == "committed"]
    conflicts = [r for r in results if r["status"] == "conflict"]
    assert len(results) == PROCESSES * BATCHES
    assert committed, "no batch committed"
    assert conflicts, "the race produced no conflict; it did not exercise anything"

    with engine.open() as store:
        # One generation per committed batch, plus the seed batch.
        assert store.generation() == len(committed) + 1
        assert sorted(r["generation"] for r in committed) == list(range(2, len(committed) + 2))
        history = {i: store.history(i) for i in ids}
        current = {i: store.get(i) for i in ids}

    rows_by_run: dict[str, dict[str, int]] = defaultdict(dict)
    for lesson_id, entries in history.items():
        revisions = [entry.revision for entry in entries]
        assert revisions == list(range(1, len(revisions) + 1)), lesson_id
        assert current[lesson_id].revision == revisions[-1]
        for entry in entries:
            rows_by_run[entry.run_id][lesson_id] = entry.revision
        # Each revision was written by a batch that expected exactly the one before it.
        for entry in entries[1:]:
            batch = next(r for r in committed if r["run_id"] == entry.run_id)
            assert batch["expected"][lesson_id] == entry.revision - 1

    for batch in committed:
        # All of the batch and nothing else, at the revisions its receipt reported.
        assert rows_by_run[batch["run_id"]] == batch["revisions"]
        assert batch["revisions"] == {i: rev + 1 for i, rev in batch["expected"].items()}
    for batch in conflicts:
        assert batch["run_id"] not in rows_by_run
        named = {m[0] for m in batch["mismatches"]}
        assert named
        assert named <= set(batch["expected"])
        for lesson_id, expected, found in batch["mismatches"]:
            assert expected == batch["expected"][lesson_id]
            assert found > expected
    total_writes = sum(len(r["revisions"]) for r in committed)
    assert sum(len(entries) for entries in history.values()) == SHARED + total_writes


@pytest.mark.sqlite_only
def test_processes_creating_the_same_store_at_once_migrate_it_once(store_path: Path) -> None:
    openers = [spawn("open", str(store_path)) for _ in range(PROCESSES)]
    release(openers)
    for opener in openers:
        stdout, stderr = opener.communicate(timeout=30)
        assert opener.returncode == 0, stderr
        assert stdout.strip() == "0"
    with sqlite3.connect(store_path) as raw:
        names = [row[0] for row in raw.execute("SELECT name FROM schema_migrations")]
        (meta_rows,) = raw.execute("SELECT count(*) FROM meta").fetchone()
    raw.close()
    assert names == [migration.name for migration in MIGRATIONS]
    assert meta_rows == 1


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    ("kill_after", "present"), [(700, False), (0, True)], ids=["mid-batch", "after-commit"]
)
def test_writer_killed_during_a_large_batch_leaves_all_or_nothing(
    store_path: Path, kill_after: int, present: bool
) -> None:
    with SqliteStore(store_path) as store:
        store.publish(
            Publication(
                run_id="seed",
                mutations=(
                    Mutation(
                        op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft()
                    ),
                ),
            )
        )
    writer = spawn("crash", str(store_path), "1000", str(kill_after))
    stdout, stderr = writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGKILL, stderr
    assert stdout.strip() == ("committed" if present else "writing")

    with SqliteStore(store_path) as store:
        report = store.check()
        assert report.ok, report.problems
        assert report.generation == (2 if present else 1)
        assert report.live == (1001 if present else 1)
        bulk = [lesson for lesson in store.list_lessons() if lesson.title.startswith("bulk ")]
        assert len(bulk) == (1000 if present else 0)
    with sqlite3.connect(store_path) as raw:
        (rows,) = raw.execute("SELECT count(*) FROM history WHERE run_id = 'crash-run'").fetchone()
    raw.close()
    assert rows == (1000 if present else 0)


@pytest.mark.sqlite_only
@pytest.mark.timeout(60)
def test_backup_taken_while_another_process_writes_is_consistent(
    store_path: Path, tmp_path: Path
) -> None:
    SqliteStore(store_path).close()
    stop = tmp_path / "stop-writing"
    writer = spawn("write-loop", str(store_path), str(stop))
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        with SqliteStore(store_path, read_only=True) as store:
            copies = [store.backup(tmp_path / f"backup-{n}.sqlite3") for n in range(3)]
        # The writer stops once it has committed again after the backups began, not after a
        # fixed time: it wrote all along and no longer than the backups needed.
        assert writer.stdout.readline().startswith("committed ")
    finally:
        stop.touch()
        stdout, stderr = writer.communicate(timeout=30)
    assert writer.returncode == 0, stderr
    assert int(stdout.split()[-1]) > 1  # the writer kept committing around the backups
    for copy in copies:
        assert copy.stat().st_mode & 0o777 == 0o600
        with SqliteStore(copy, read_only=True) as restored:
            report = restored.check()
            assert report.ok, report.problems
            revisions = {lesson.revision for lesson in restored.list_lessons()}
        # A consistent copy: the last batch it holds is there whole, for all 20 lessons.
        assert report.live == 20
        assert revisions == {report.generation}
