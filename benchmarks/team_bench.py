"""Team benchmark: racing processes on PostgreSQL, directly and through the memory service.

Run: ``python benchmarks/team_bench.py`` (``--processes N``, ``--batches N``, ``--lessons N``).

Starts a throwaway PostgreSQL cluster (``tests/pg_cluster.py``), then:

1. direct: ``--processes`` processes each run ``--batches`` checked batches against one tenant
   of a ``PostgresStore``: snapshot, pick 1-3 of 16 shared lessons, upsert them at the
   revisions seen. Every outcome is recorded and checked against the stored history: no lost
   update (each revision was written by a batch that expected the one before it, revisions are
   contiguous, every committed batch is there whole, no conflicting batch left a row), and each
   conflict names only ids whose revision had moved on;
2. service: the same through ``RemoteBackend`` and the service (uvicorn in this process);
3. a snapshot of ``--lessons`` lessons through the service (median of 5);
4. legitimate snapshot latency through the service alone, then while 40 clients send a byte a
   second, 2 loops send wrong tokens and 2 loops send oversized bodies.

Prints publications per second, conflict counts, snapshot time and size, latencies.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from active_memory.errors import RevisionConflict  # noqa: E402
from active_memory.models.changes import Mutation, Publication  # noqa: E402
from active_memory.models.ids import new_lesson_id  # noqa: E402
from active_memory.store.backend import RunIdentity, SnapshotRequest  # noqa: E402
from factories import REPOSITORY, make_draft  # noqa: E402

SHARED = 16


def _open(kind: str, location: str, secret: str) -> Any:
    if kind == "direct":
        from active_memory.store.postgres import PostgresStore

        return PostgresStore(location, tenant=secret, pool_size=1, lock_timeout_ms=60_000)
    from active_memory.store.remote import RemoteBackend

    return RemoteBackend(location, token=secret, timeout_s=60)


def worker(
    kind: str, location: str, secret: str, n: int, batches: int, out: str, at: float
) -> None:
    rng = random.Random(n)
    request = SnapshotRequest(RunIdentity(f"worker-{n}", REPOSITORY))
    results: list[dict[str, Any]] = []
    with _open(kind, location, secret) as backend:
        time.sleep(max(0.0, at - time.time()))
        for batch in range(batches):
            seen = backend.snapshot(request).by_id()
            chosen = rng.sample(sorted(seen), rng.randint(1, 3))
            run_id = f"{kind}-w{n}-b{batch}"
            expected = {i: seen[i].revision for i in chosen}
            mutations = tuple(
                Mutation(op="upsert", id=i, expected_revision=r, draft=make_draft(f"{run_id} {i}"))
                for i, r in expected.items()
            )
            try:
                receipt = backend.publish(Publication(run_id=run_id, mutations=mutations))
            except RevisionConflict as conflict:
                mismatches = [[m.id, m.expected, m.found] for m in conflict.mismatches]
                results.append({"run_id": run_id, "status": "conflict", "expected": expected,
                                "mismatches": mismatches})  # fmt: skip
            else:
                results.append({"run_id": run_id, "status": "committed", "expected": expected,
                                "revisions": receipt.revisions})  # fmt: skip
    Path(out).write_text(json.dumps(results))


def _seed(store: Any) -> list[str]:
    ids = sorted(new_lesson_id() for _ in range(SHARED))
    mutations = tuple(
        Mutation(op="upsert", id=i, expected_revision=0, draft=make_draft()) for i in ids
    )
    store.publish(Publication(run_id="seed", mutations=mutations))
    return ids


def _race(kind: str, location: str, secret: str, processes: int, batches: int) -> list[Any]:
    folder = Path(tempfile.mkdtemp(prefix="team-bench-"))
    outputs = [folder / f"{kind}-{n}.json" for n in range(processes)]
    at = time.time() + 2.0
    spawned = [
        subprocess.Popen([sys.executable, __file__, "--worker", kind, location, secret, *args])
        for args in ([str(n), str(batches), str(out), str(at)] for n, out in enumerate(outputs))
    ]
    for process in spawned:
        if process.wait() != 0:
            raise SystemExit(f"a {kind} worker failed")
    elapsed = time.time() - at
    return [elapsed, [r for out in outputs for r in json.loads(out.read_text())]]


def _verify(store: Any, ids: list[str], results: list[dict[str, Any]]) -> dict[str, int]:
    committed = [r for r in results if r["status"] == "committed"]
    conflicts = [r for r in results if r["status"] == "conflict"]
    by_run = {r["run_id"]: r for r in committed}
    rows: dict[str, dict[str, int]] = defaultdict(dict)
    lost = 0
    for lesson_id in ids:
        history = store.history(lesson_id)
        revisions = [entry.revision for entry in history]
        lost += revisions != list(range(1, len(revisions) + 1))
        for entry in history[1:]:
            rows[entry.run_id][lesson_id] = entry.revision
            batch = by_run.get(entry.run_id)
            lost += batch is None or batch["expected"][lesson_id] != entry.revision - 1
    lost += sum(rows.get(b["run_id"]) != b["revisions"] for b in committed)
    stray = sum(c["run_id"] in rows for c in conflicts)
    wrong = sum(
        not c["mismatches"] or any(found <= expected for _, expected, found in c["mismatches"])
        for c in conflicts
    )
    return {"committed": len(committed), "conflicts": len(conflicts), "lost_updates": lost,
            "conflicting_batches_that_wrote": stray, "conflicts_misreported": wrong}  # fmt: skip


def _report(label: str, elapsed: float, figures: dict[str, int], attempts: int) -> None:
    print(f"{label}: {attempts} batches in {elapsed:.2f} s; {figures['committed']} committed "
          f"({figures['committed'] / elapsed:.1f} publications/s, {attempts / elapsed:.1f} "
          f"attempts/s), {figures['conflicts']} conflicts reported as conflicts; lost updates "
          f"{figures['lost_updates']}, conflicting batches that wrote "
          f"{figures['conflicting_batches_that_wrote']}, misreported conflicts "
          f"{figures['conflicts_misreported']}")  # fmt: skip


def _slow(url: str, stop: threading.Event) -> None:
    parts = urlsplit(url)
    while not stop.is_set():
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
                sock.sendall(b"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\n")
                while not stop.is_set():
                    sock.sendall(b"a")
                    time.sleep(1.0)
        except OSError:
            continue  # cut off: come back


def _latencies(backend: Any, count: int) -> list[float]:
    request = SnapshotRequest(RunIdentity("bench", REPOSITORY))
    out = []
    for _ in range(count):
        started = time.perf_counter()
        backend.snapshot(request)
        out.append(time.perf_counter() - started)
        time.sleep(0.02)
    return out


def _shown(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"median {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"max {ordered[-1] * 1000:.1f} ms")  # fmt: skip


def _abuse(url: str, token: str) -> None:
    import httpx

    from active_memory.store.remote import RemoteBackend

    stop = threading.Event()
    refused: list[int] = []

    def bad(body: bytes, header: str) -> None:
        with httpx.Client() as client:
            while not stop.is_set():
                try:
                    answer = client.post(
                        f"{url}/v1/snapshot", content=body, headers={"authorization": header}
                    )
                except httpx.HTTPError:
                    refused.append(0)  # cut off mid-upload, before the refusal could be read
                    continue
                refused.append(answer.status_code)

    with RemoteBackend(url, token=token) as backend:
        alone = _latencies(backend, 200)
        crowd = [threading.Thread(target=_slow, args=(url, stop)) for _ in range(40)]
        wrong = "Bearer amt_0000000000000000_" + "x" * 43
        huge = b" " * (9 * 1024 * 1024)
        crowd += [threading.Thread(target=bad, args=(b"{}", wrong)) for _ in range(2)]
        crowd += [threading.Thread(target=bad, args=(huge, f"Bearer {token}")) for _ in range(2)]
        for thread in crowd:
            thread.start()
        time.sleep(1.0)
        abused = _latencies(backend, 200)
        stop.set()
        for thread in crowd:
            thread.join(15)
    counts = {code: refused.count(code) for code in sorted(set(refused))}
    print(f"legitimate snapshot, alone: {_shown(alone)}")
    print(f"legitimate snapshot, during abuse (40 slow clients, wrong tokens, 9 MiB bodies): "
          f"{_shown(abused)}; abusive requests answered by status {counts} (0: connection cut "
          "mid-upload)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--processes", type=int, default=8, help="writer processes racing on the shared lessons"
    )
    parser.add_argument(
        "--batches", type=int, default=200, help="checked batches each writer publishes"
    )
    parser.add_argument(
        "--lessons",
        type=int,
        default=10_000,
        help="lessons in the store whose snapshot is timed through the service",
    )
    args = parser.parse_args()

    import pg_cluster
    from active_memory.server import RunningService, build_service
    from active_memory.store.postgres import PostgresStore

    reason = pg_cluster.unavailable()
    if reason is not None:
        raise SystemExit(f"no PostgreSQL: {reason}")
    cluster = pg_cluster.Cluster()
    try:
        url = cluster.create_database("team_bench")
        attempts = args.processes * args.batches
        with PostgresStore(url, tenant="direct") as store:
            ids = _seed(store)
            elapsed, results = _race("direct", url, "direct", args.processes, args.batches)
            _report("direct PostgreSQL", elapsed, _verify(store, ids, results), attempts)

        service = build_service(url, pool_size=16)
        with RunningService(service) as running:
            token = service.credentials.create(tenant="team", repository=REPOSITORY).token
            store = service.store("team")
            ids = _seed(store)
            elapsed, results = _race("service", running.url, token, args.processes, args.batches)
            _report("through the service", elapsed, _verify(store, ids, results), attempts)

            big = service.credentials.create(tenant="big", repository=REPOSITORY).token
            bulk = service.store("big")
            for start in range(0, args.lessons, 2500):
                mutations = tuple(
                    Mutation(op="upsert", id=new_lesson_id(), expected_revision=0,
                             draft=make_draft(files=(f"src/m{start + n}.py",)))
                    for n in range(min(2500, args.lessons - start))
                )  # fmt: skip
                bulk.publish(Publication(run_id=f"bulk-{start}", mutations=mutations))
            from active_memory.store.remote import RemoteBackend

            request = SnapshotRequest(RunIdentity("bench", REPOSITORY))
            times, decoded, count = [], [], 0
            for _ in range(5):  # a new host each time: nothing decoded before
                with RemoteBackend(running.url, token=big) as remote:
                    started = time.perf_counter()
                    lessons = remote.snapshot(request).lessons
                    times.append(time.perf_counter() - started)
                    count = len(tuple(lessons))  # every lesson decoded and validated
                    decoded.append(time.perf_counter() - started)
            direct_times = []
            for _ in range(5):
                started = time.perf_counter()
                bulk.snapshot(request)
                direct_times.append(time.perf_counter() - started)
            size = len(json.dumps([lesson.model_dump(mode="json") for lesson in
                                   bulk.snapshot(request).lessons]))  # fmt: skip
            print(f"snapshot of {count} lessons through the service: median "
                  f"{statistics.median(times):.3f} s (min {min(times):.3f} s) verified, "
                  f"{statistics.median(decoded):.3f} s with every lesson decoded; about "
                  f"{size / 1e6:.1f} MB of lessons; directly from PostgreSQL (verified): "
                  f"median {statistics.median(direct_times):.3f} s")  # fmt: skip
            _abuse(running.url, token)
        service.close()
    finally:
        cluster.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        kind, location, secret, n, batches, out, at = sys.argv[2:9]
        worker(kind, location, secret, int(n), int(batches), out, float(at))
    else:
        main()
