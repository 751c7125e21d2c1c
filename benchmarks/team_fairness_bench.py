"""Fairness benchmark: one token's over-capacity batches against another token's publications.

Run: ``python benchmarks/team_fairness_bench.py`` (``--publishes N``, ``--attackers N``).

Starts a throwaway PostgreSQL cluster (``tests/pg_cluster.py``) and the memory service with its
default limits over a tenant whose store is full (``max_live`` 2,000, 2,000 lessons). A
legitimate token publishes single-mutation batches (an upsert of its own lesson at the revision
it holds), ``--publishes`` times alone, then as many times while ``--attackers`` loops of a
second token of the same tenant send, in turn, a 5,000-mutation batch (about 2.2 MB, over the
per-publication cap) and a 1,000-mutation batch of creations (under the cap, over the store's
capacity). Before this service refused them before the writers' lock, such batches held that
lock for seconds each. The attack runs in processes of its own and ignores ``Retry-After``.

Prints the legitimate publication's median and p90 alone and under the attack, their ratio (the
goal: the loaded median at most 3x the unloaded one), and how the attack was answered.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from active_memory.models.changes import Mutation, Publication  # noqa: E402
from active_memory.models.ids import new_lesson_id  # noqa: E402
from factories import REPOSITORY, make_draft  # noqa: E402

FULL = 2000


def _body(count: int) -> bytes:
    mutations = tuple(
        Mutation(op="upsert", id=new_lesson_id(), expected_revision=0,
                 draft=make_draft(files=(f"src/attack{n}.py",)))
        for n in range(count)
    )  # fmt: skip
    publication = Publication(run_id="attack", mutations=mutations)
    return json.dumps({"publication": publication.model_dump(mode="json")}).encode()


def _legit(client: object, url: str, token: str, lesson_id: str, count: int) -> list[float]:
    import httpx

    assert isinstance(client, httpx.Client)
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    times: list[float] = []
    revision = int(
        client.post(f"{url}/v1/history", json={"id": lesson_id}, headers=headers).json()["entries"][
            -1
        ]["revision"]
    )
    for n in range(count):
        mutation = Mutation(op="upsert", id=lesson_id, expected_revision=revision,
                            draft=make_draft(f"Keep the schema check first, take {n}"))  # fmt: skip
        body = {"publication": Publication(run_id="legit", mutations=(mutation,)).model_dump(
            mode="json")}  # fmt: skip
        started = time.perf_counter()
        answer = client.post(f"{url}/v1/publish", json=body, headers=headers, timeout=60)
        times.append(time.perf_counter() - started)
        if answer.status_code != 200:
            raise SystemExit(f"a legitimate publication failed: {answer.status_code} {answer.text}")
        revision = answer.json()["revisions"][lesson_id]
        time.sleep(0.02)
    return times


def _shown(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(ordered) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--publishes", type=int, default=40, help="legitimate publications each")
    parser.add_argument("--attackers", type=int, default=2, help="loops of over-capacity batches")
    parser.add_argument("--no-rates", action="store_true",
                        help="per-token rates off: the refusals before the lock alone")  # fmt: skip
    args = parser.parse_args()

    import httpx

    import pg_cluster
    from active_memory.server import RunningService, ServiceLimits, build_service
    from active_memory.server.fairness import RateSettings
    from active_memory.store.results import StoreLimits

    reason = pg_cluster.unavailable()
    if reason is not None:
        raise SystemExit(f"no PostgreSQL: {reason}")
    cluster = pg_cluster.Cluster()
    try:
        url = cluster.create_database("fairness_bench")
        limits = ServiceLimits()
        if args.no_rates:
            limits = ServiceLimits(rates=RateSettings(requests_per_s=None, bytes_per_s=None))
        service = build_service(
            url, pool_size=16, limits=limits, store_limits=StoreLimits(max_live=FULL)
        )
        with RunningService(service) as running:
            issue = service.credentials.create
            legit = issue(tenant="team", repository=REPOSITORY, label="legit").token
            attacker = issue(tenant="team", repository=REPOSITORY, label="attacker").token
            store = service.store("team")
            ids = [new_lesson_id() for _ in range(FULL)]
            for start in range(0, FULL, 1000):
                mutations = tuple(
                    Mutation(op="upsert", id=i, expected_revision=0,
                             draft=make_draft(files=(f"src/m{start + n}.py",)))
                    for n, i in enumerate(ids[start : start + 1000])
                )  # fmt: skip
                store.publish(Publication(run_id="fill", mutations=mutations))
            large, full = len(_body(5000)) / 1e6, len(_body(1000)) / 1e6
            print(f"attack bodies: {large:.1f} MB (5000 mutations), {full:.1f} MB "
                  "(1000 creations into a full store)")  # fmt: skip

            with httpx.Client() as client:
                alone = _legit(client, running.url, legit, ids[0], args.publishes)
            # The attack runs in processes of its own: in this one it would share the GIL with
            # the service and slow it down as no remote client can.
            folder = Path(tempfile.mkdtemp(prefix="fairness-bench-"))
            stop = folder / "stop"
            loops = [
                subprocess.Popen([sys.executable, __file__, "--attack", running.url, attacker,
                                  str(stop), str(folder / f"attack-{n}.json")])
                for n in range(args.attackers)
            ]  # fmt: skip
            time.sleep(3.0)  # the attackers have built their bodies and are sending
            try:
                with httpx.Client() as client:
                    loaded = _legit(client, running.url, legit, ids[0], args.publishes)
            finally:
                stop.touch()
                for loop in loops:
                    loop.wait(60)
            answered: Counter[int] = Counter()
            for n in range(args.attackers):
                counted = json.loads((folder / f"attack-{n}.json").read_text())
                answered.update({int(status): count for status, count in counted.items()})
        service.close()
    finally:
        cluster.stop()
    ratio = statistics.median(loaded) / statistics.median(alone)
    print(f"legitimate single-mutation publication, alone: {_shown(alone)}")
    rates = "off" if args.no_rates else "on"
    print(f"legitimate single-mutation publication, under {args.attackers} loops of "
          f"over-capacity batches (per-token rates {rates}): {_shown(loaded)}; all "
          f"{len(loaded)} committed")  # fmt: skip
    print(f"loaded median / unloaded median: {ratio:.1f}x (goal at most 3x); the attack was "
          f"answered by status {dict(sorted(answered.items()))} (413: over the mutation cap, "
          "422: over capacity, 429: over the token's rates, 0: connection cut)")  # fmt: skip


def attack(url: str, token: str, stop: str, out: str) -> None:
    """One loop of over-capacity batches until ``stop`` exists; Retry-After is ignored."""
    import httpx

    bodies = [_body(5000), _body(1000)]
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    answered: Counter[int] = Counter()
    with httpx.Client() as client:
        n = 0
        while not Path(stop).exists():
            try:
                answer = client.post(f"{url}/v1/publish", content=bodies[n % 2],
                                     headers=headers, timeout=60)  # fmt: skip
                answered[answer.status_code] += 1
            except httpx.HTTPError:
                answered[0] += 1
            n += 1
    Path(out).write_text(json.dumps(answered))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--attack"]:
        attack(*sys.argv[2:6])
    else:
        main()
