"""Team benchmark: racing processes on PostgreSQL, directly and through the memory service.

Run: ``python benchmarks/team_bench.py`` (``--processes N``, ``--batches N``, ``--lessons N``).

Starts a throwaway PostgreSQL cluster (``tests/pg_cluster.py``), then races ``--processes``
processes of ``--batches`` batches each (``team_race``), every race beside a raw baseline in
which as many processes run as many transactions, each a plain ``UPDATE`` of the same rows
(the same random choices), with a body of a card's size:

1. the checked race, directly against one tenant of a ``PostgresStore``, then through
   ``RemoteBackend`` and the service (uvicorn in this process): a batch is a snapshot, then a
   publication of 1-3 upserts of the 16 shared lessons at the revisions seen. Every outcome is
   checked against the stored history: no lost update (each revision was written by a batch
   that expected the one before it, revisions are contiguous, every committed batch is there
   whole, no conflicting batch left a row), and each conflict names only ids whose revision
   had moved on;
2. publications alone, directly and through the service: each process publishes 1-3 upserts
   a batch of lessons only it writes, at the revisions its receipts gave, so every batch
   commits; its baseline updates the same rows. The goals are set against this race: a
   publication at most 3x the raw baseline directly, at most 6x through the service;
3. the floors: the direct publications recorded and sent again with none of the client's work
   (``team_replay``), and once more with everything after the read as one call of a
   PL/pgSQL function of the benchmark's own (``team_one_call``, a design the store does not
   have, measured so that its cost can be weighed), the CPU a publication costs (its
   process's and the cluster's, from ``/proc``) with the screen of its drafts, and the HTTP
   hop alone of each race through the service's stack (``team_hop``);
4. a snapshot of ``--lessons`` lessons through the service (median of 5), and legitimate
   snapshot latency alone and while the service is abused (``team_abuse``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

import team_one_call  # noqa: E402
from team_abuse import abuse  # noqa: E402
from team_hop import hop_floor, hop_worker  # noqa: E402
from team_race import POSTMASTER, mark_started, owned, race, ready_then_wait  # noqa: E402

from active_memory.errors import RevisionConflict  # noqa: E402
from active_memory.models.changes import Mutation, Publication  # noqa: E402
from active_memory.models.ids import new_lesson_id  # noqa: E402
from active_memory.store.backend import RunIdentity, SnapshotRequest  # noqa: E402
from factories import REPOSITORY, make_draft  # noqa: E402

SHARED = 16


RAW_TABLE = "raw_bench.lessons"


def raw_worker(url: str, n: int, batches: int, out: str, processes: int = 0) -> None:
    """The baseline: the same row choices as ``worker`` (with ``processes``, as
    ``publisher``), each one plain UPDATE transaction."""
    import psycopg

    rng = random.Random(n)
    body = make_draft("raw").model_dump_json()
    with psycopg.connect(url, autocommit=True) as conn:
        ids = [row[0] for row in conn.execute(f"SELECT id FROM {RAW_TABLE} ORDER BY id")]
        if processes:
            ids = owned(ids, n, processes)
        ready_then_wait(out)
        started = time.process_time()
        for _ in range(batches):
            chosen = rng.sample(ids, rng.randint(1, min(3, len(ids))))
            with conn.transaction():
                # The rows locked in id order, in the same statement: two transactions taking
                # them in scan order can deadlock.
                conn.execute(
                    f"UPDATE {RAW_TABLE} SET revision = revision + 1, body = %s WHERE id IN "
                    f"(SELECT id FROM {RAW_TABLE} WHERE id = ANY(%s) ORDER BY id FOR UPDATE)",
                    (body, chosen),
                )
    cpu_s = time.process_time() - started
    Path(out).write_text(json.dumps({"ended": time.time(), "cpu_s": cpu_s, "results": []}))


def _raw_table(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA raw_bench")
        conn.execute(f"CREATE TABLE {RAW_TABLE} (id text PRIMARY KEY, revision int, body text)")
        for lesson_id in sorted(new_lesson_id() for _ in range(SHARED)):
            conn.execute(f"INSERT INTO {RAW_TABLE} VALUES (%s, 1, '')", (lesson_id,))


def _open(kind: str, location: str, secret: str) -> Any:
    if kind == "direct":
        from active_memory.store.postgres import PostgresStore

        return PostgresStore(location, tenant=secret, pool_size=1, lock_timeout_ms=60_000)
    from active_memory.store.remote import RemoteBackend

    return RemoteBackend(location, token=secret, timeout_s=60)


def worker(kind: str, location: str, secret: str, n: int, batches: int, out: str) -> None:
    rng = random.Random(n)
    request = SnapshotRequest(RunIdentity(f"worker-{n}", REPOSITORY))
    results: list[dict[str, Any]] = []
    with _open(kind, location, secret) as backend:
        backend.generation()  # connected before the race starts
        ready_then_wait(out)
        started = time.process_time()
        for batch in range(batches):
            seen = backend.snapshot(request).by_id()
            ordered = sorted(seen)
            chosen = rng.sample(ordered, rng.randint(1, 3))
            run_id = f"{kind}-w{n}-b{batch}"
            expected = {i: seen[i].revision for i in chosen}
            # No lesson id in the text: an id is random enough to read as a secret.
            mutations = tuple(
                Mutation(op="upsert", id=i, expected_revision=r,
                         draft=make_draft(f"Batch {batch} of worker {n} edits lesson "
                                          f"{ordered.index(i)}"))
                for i, r in expected.items()
            )  # fmt: skip
            try:
                receipt = backend.publish(Publication(run_id=run_id, mutations=mutations))
            except RevisionConflict as conflict:
                mismatches = [[m.id, m.expected, m.found] for m in conflict.mismatches]
                results.append({"run_id": run_id, "status": "conflict", "expected": expected,
                                "mismatches": mismatches})  # fmt: skip
            else:
                results.append({"run_id": run_id, "status": "committed", "expected": expected,
                                "revisions": receipt.revisions})  # fmt: skip
    cpu_s = time.process_time() - started
    Path(out).write_text(json.dumps({"ended": time.time(), "cpu_s": cpu_s, "results": results}))


def publisher(
    kind: str, location: str, secret: str, n: int, batches: int, out: str, processes: int
) -> None:
    """Publications alone: process ``n`` edits only its own lessons (``team_race.owned``), so the
    revisions its receipts give are the ones it next expects, and no batch conflicts; each
    batch upserts 1-3 of them (as many as it owns), chosen as ``raw_worker`` chooses rows."""
    started: list[float] = []
    with _open(kind, location, secret) as backend:
        _own_publications(backend, kind, n, batches, processes, lambda: mark_started(out, started))
    cpu_s = time.process_time() - started[0]
    Path(out).write_text(json.dumps({"ended": time.time(), "cpu_s": cpu_s, "results": []}))


def _own_publications(
    backend: Any, kind: str, n: int, batches: int, processes: int, ready: Any
) -> None:
    rng = random.Random(n)
    request = SnapshotRequest(RunIdentity(f"publisher-{n}", REPOSITORY))
    seen = backend.snapshot(request).by_id()
    ordered = sorted(seen)
    revisions = {i: seen[i].revision for i in owned(ordered, n, processes)}
    ready()
    for batch in range(batches):
        chosen = rng.sample(sorted(revisions), rng.randint(1, min(3, len(revisions))))
        mutations = tuple(
            Mutation(op="upsert", id=i, expected_revision=revisions[i],
                     draft=make_draft(f"Batch {batch} of publisher {n} edits lesson "
                                      f"{ordered.index(i)}"))
            for i in chosen
        )  # fmt: skip
        receipt = backend.publish(Publication(run_id=f"{kind}-p{n}-b{batch}",
                                              mutations=mutations))  # fmt: skip
        revisions.update(receipt.revisions)


def replayer(url: str, folder: str, n: int, out: str) -> None:
    """The floor's worker: publisher ``n``'s recorded publications, sent again."""
    import team_replay

    started: list[float] = []
    team_replay.replay(url, "replayed", Path(folder) / f"{n}.pickle",
                       lambda: mark_started(out, started))  # fmt: skip
    cpu_s = time.process_time() - started[0]
    Path(out).write_text(json.dumps({"ended": time.time(), "cpu_s": cpu_s, "results": []}))


def one_caller(url: str, folder: str, n: int, out: str) -> None:
    """The one-call floor's worker: publisher ``n``'s recorded publications, each its read
    then one call of the benchmark's function (``team_one_call``)."""
    started: list[float] = []
    team_one_call.send(url, "one_call", Path(folder) / f"{n}.pickle",
                       lambda: mark_started(out, started))  # fmt: skip
    cpu_s = time.process_time() - started[0]
    Path(out).write_text(json.dumps({"ended": time.time(), "cpu_s": cpu_s, "results": []}))


def _recorded(url: str, ids: list[str], processes: int, batches: int) -> tuple[str, float]:
    """Each publisher's publications, made one process after another on a tenant of their own
    and recorded (``team_replay``); the folder of the recordings, and the CPU seconds the
    screen of their drafts took."""
    import team_replay

    from active_memory.store.postgres import PostgresStore, store as postgres_store

    screened = [0.0]
    screen = postgres_store.refuse_flagged

    def timed(*args: Any) -> None:
        started = time.process_time()
        try:
            screen(*args)
        finally:
            screened[0] += time.process_time() - started

    folder = Path(tempfile.mkdtemp(prefix="team-replay-"))
    postgres_store.refuse_flagged = timed  # type: ignore[assignment]
    try:
        with PostgresStore(url, tenant="recorded", pool_size=1) as store:
            _seed(store, ids)
            for n in range(processes):
                with team_replay.recording() as recorded:
                    _own_publications(store, "direct", n, batches, processes, lambda: None)
                team_replay.save(recorded, folder / f"{n}.pickle")
    finally:
        postgres_store.refuse_flagged = screen
    return str(folder), screened[0]


def _seed(store: Any, ids: list[str] | None = None) -> list[str]:
    ids = ids or sorted(new_lesson_id() for _ in range(SHARED))
    mutations = tuple(
        Mutation(op="upsert", id=i, expected_revision=0, draft=make_draft()) for i in ids
    )
    store.publish(Publication(run_id="seed", mutations=mutations))
    return ids


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


def _published_whole(store: Any, attempts: int) -> None:
    """Every batch of the publication race committed: the generation counts them all."""
    generation = store.generation()
    if generation != attempts + 1:  # and the seed
        raise SystemExit(f"the publication race committed {generation - 1} of {attempts}")


def _report(label: str, elapsed: float, figures: dict[str, int], attempts: int) -> None:
    print(f"{label}: {attempts} batches in {elapsed:.2f} s; {figures['committed']} committed "
          f"({figures['committed'] / elapsed:.1f} publications/s, {attempts / elapsed:.1f} "
          f"attempts/s), {figures['conflicts']} conflicts reported as conflicts; lost updates "
          f"{figures['lost_updates']}, conflicting batches that wrote "
          f"{figures['conflicting_batches_that_wrote']}, misreported conflicts "
          f"{figures['conflicts_misreported']}")  # fmt: skip


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
    if not 1 <= args.processes <= SHARED:
        parser.error(f"--processes must be 1 to {SHARED}: in the publication race each process "
                     f"writes lessons of its own, of the {SHARED} shared")  # fmt: skip

    import pg_cluster
    from active_memory.server import RunningService, ServiceLimits, build_service
    from active_memory.server.fairness import RateSettings
    from active_memory.store.postgres import PostgresStore

    reason = pg_cluster.unavailable()
    if reason is not None:
        raise SystemExit(f"no PostgreSQL: {reason}")
    cluster = pg_cluster.Cluster()
    POSTMASTER.append(int((cluster.data / "postmaster.pid").read_text().split()[0]))
    try:
        url = cluster.create_database("team_bench")
        attempts = args.processes * args.batches
        _raw_table(url)
        raw, _, raw_cpu, _ = race("raw", url, "", args.processes, args.batches)
        print(f"raw PostgreSQL baseline: {attempts} plain UPDATE transactions of 1-3 rows in "
              f"{raw:.2f} s ({attempts / raw:.1f} transactions/s)")  # fmt: skip
        raw_owned, _, raw_owned_cpu, raw_owned_server = race(
            "raw", url, "", args.processes, args.batches, owned=True
        )
        with PostgresStore(url, tenant="direct") as store:
            ids = _seed(store)
            elapsed, results, _, _ = race("direct", url, "direct", args.processes, args.batches)
            _report("direct PostgreSQL", elapsed, _verify(store, ids, results), attempts)
        direct = elapsed
        with PostgresStore(url, tenant="direct_alone") as store:
            ids = _seed(store)
            published, _, published_cpu, published_server = race(
                "direct", url, "direct_alone", args.processes, args.batches, owned=True
            )
            _published_whole(store, attempts)
        recordings, screened = _recorded(url, ids, args.processes, args.batches)
        with PostgresStore(url, tenant="replayed") as store:
            _seed(store, ids)
            replayed, _, replayed_cpu, replayed_server = race(
                "replay", url, recordings, args.processes, args.batches
            )
            _published_whole(store, attempts)
        with PostgresStore(url, tenant="one_call") as store:
            _seed(store, ids)
            team_one_call.install(url, "one_call")
            one_call, _, one_call_cpu, one_call_server = race(
                "one_call", url, recordings, args.processes, args.batches
            )
            _published_whole(store, attempts)

        def ms(seconds: float) -> str:
            return f"{seconds / attempts * 1e3:.2f} ms"

        raw_total = raw_owned_cpu + raw_owned_server
        floor = replayed_cpu + replayed_server + screened
        print(f"floor of a direct publication, the database's share (the same publications "
              f"sent again as recorded: the same read, lock, writes and commit, none of the "
              f"client's own work): {replayed:.2f} s, {replayed / raw_owned:.1f}x the raw "
              f"baseline of the same rows")  # fmt: skip
        print(f"CPU a publication alone (its process and PostgreSQL, from /proc): direct "
              f"{ms(published_cpu + published_server)} (PostgreSQL {ms(published_server)}); "
              f"replayed {ms(replayed_cpu + replayed_server)} (PostgreSQL "
              f"{ms(replayed_server)}); the screen of its drafts {ms(screened)}; a raw "
              f"transaction {ms(raw_total)} (PostgreSQL {ms(raw_owned_server)}): the replay "
              f"and the screen alone cost {floor / raw_total:.1f}x a raw transaction's "
              "CPU")  # fmt: skip
        print(f"floor of a design the store does not have, the same writes as one server-side "
              f"call (the same read, then one PL/pgSQL function of this benchmark's: the lock, "
              f"the store's guard, one statement a table): {one_call:.2f} s, "
              f"{one_call / raw_owned:.1f}x the raw baseline of the same rows; CPU a "
              f"publication {ms(one_call_cpu + one_call_server)} (PostgreSQL "
              f"{ms(one_call_server)}); with the screen "
              f"{(one_call_cpu + one_call_server + screened) / raw_total:.1f}x a raw "
              "transaction's CPU")  # fmt: skip

        # The race measures throughput: 8 processes share one token here, so its rates are off.
        unmetered = ServiceLimits(rates=RateSettings(requests_per_s=None, bytes_per_s=None))
        service = build_service(url, pool_size=16, limits=unmetered)
        with RunningService(service) as running:
            token = service.credentials.create(tenant="team", repository=REPOSITORY).token
            store = service.store("team")
            ids = _seed(store)
            served = time.process_time()  # this process runs the service, and waits meanwhile
            elapsed, results, writers_cpu, _ = race(
                "service", running.url, token, args.processes, args.batches
            )
            served = time.process_time() - served
            _report("through the service", elapsed, _verify(store, ids, results), attempts)
            print(f"time of the same race as a ratio of the raw baseline: direct "
                  f"{direct / raw:.1f}x, through the service {elapsed / raw:.1f}x")  # fmt: skip
            print(f"CPU a batch of the service's race: the service {ms(served)}, its writer "
                  f"{ms(writers_cpu)}; of a raw transaction, its writer {ms(raw_cpu)}")  # fmt: skip
            import httpx

            seen = httpx.post(f"{running.url}/v1/snapshot", headers={"authorization":
                              f"Bearer {token}"}, json={"run_id": "hop"}).content  # fmt: skip
            receipt = b'{"generation":1,"revisions":{},"retired":[]}'
            hop, hop_served, hop_writers = hop_floor(seen, receipt, args.processes, args.batches)
            print(f"floor of the service path, the HTTP hop alone (the same processes posting "
                  f"the same bodies to the same uvicorn and Starlette stack answering fixed "
                  f"bytes, no work): {attempts} batches in {hop:.2f} s, {hop / raw:.1f}x the raw "
                  f"baseline; CPU a batch: the server {ms(hop_served)}, its writer "
                  f"{ms(hop_writers)}")  # fmt: skip
            alone = service.credentials.create(tenant="alone", repository=REPOSITORY).token
            store = service.store("alone")
            _seed(store)
            serving = time.process_time()  # this process runs the service, and waits meanwhile
            served_alone, _, alone_writers, _ = race(
                "service", running.url, alone, args.processes, args.batches, owned=True
            )
            serving = time.process_time() - serving
            _published_whole(store, attempts)
            print(f"CPU a publication through the service: the service {ms(serving)} (one "
                  f"process: {serving:.2f} s of the race's {served_alone:.2f} s, "
                  f"{serving / raw_owned:.1f}x the raw baseline of the same rows), its writer "
                  f"{ms(alone_writers)}")  # fmt: skip
            hop_alone = hop_floor(seen, receipt, args.processes, args.batches, owned=True)[0]
            print(f"floor of a publication through the service, the HTTP hop alone (the "
                  f"publication race's bodies to the same stack answering fixed bytes): "
                  f"{hop_alone:.2f} s, {hop_alone / raw_owned:.1f}x the raw baseline of the "
                  "same rows")  # fmt: skip
            print(f"publications alone ({args.processes} processes x {args.batches}, each on "
                  f"its own lessons, 1-3 upserts a batch, every one committed): raw PostgreSQL "
                  f"baseline {raw_owned:.2f} s ({attempts} plain UPDATE transactions of the "
                  f"same rows); direct {published:.2f} s, {published / raw_owned:.1f}x (goal "
                  f"3x); through the service {served_alone:.2f} s, "
                  f"{served_alone / raw_owned:.1f}x (goal 6x)")  # fmt: skip

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
            abuse(running.url, token)
        service.close()
    finally:
        cluster.stop()


if __name__ == "__main__":
    if sys.argv[1:2] in (["--worker"], ["--publisher"]):
        kind, location, secret, n, batches, out, processes = sys.argv[2:9]
        alone = sys.argv[1] == "--publisher"  # the publication race's worker
        if kind == "raw":
            raw_worker(location, int(n), int(batches), out, int(processes) if alone else 0)
        elif kind == "hop":
            hop_worker(location, int(n), int(batches), out, alone)
        elif kind == "replay":
            replayer(location, secret, int(n), out)
        elif kind == "one_call":
            one_caller(location, secret, int(n), out)
        elif alone:
            publisher(kind, location, secret, int(n), int(batches), out, int(processes))
        else:
            worker(kind, location, secret, int(n), int(batches), out)
    else:
        main()
