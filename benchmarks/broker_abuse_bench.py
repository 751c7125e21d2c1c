"""Broker abuse benchmark: legitimate hook calls while 600 hostile local sockets press on it.

Run: ``python benchmarks/broker_abuse_bench.py`` (``--calls N``, ``--each N``, ``--budget-ms``).

A broker (a fixed answer: the figure is the broker's admission, not recall) serves a legitimate
client that calls it as the command helper does (a signed frame, the answer's tag checked) and as
a ``curl`` hook does (HTTP), alternately, each call with the broker's share of the helper's
call when a store fallback is installed (``--budget-ms``, 150 ms of its 250: what ``hooks
install`` writes); a call not answered within it counts as unanswered (the helper then reads the
store itself, or a hook without a fallback fails open: the lesson silently does not arrive).
First alone, then while the swarm of ``tests/recall/abuse.py`` runs in its own process:
``--each`` sockets of each kind (idle; slow, a byte every 50 ms; wrong token on keep-alive,
every 0.5 s), each reconnecting as soon as the broker drops it. The same-peer flood runs the
swarm as this user (the broker's own, as the helper); the many-peer flood splits the same
sockets among ``--peers`` swarms, each as another user (Linux and root only: the broker tells
peers apart by user there), which the per-peer limit and the reserved slots answer. Mind
``ulimit -n``: the swarm holds ``3 × --each`` sockets and the broker at most a quarter of its
own limit. ``--nice 10``
runs the swarm at a lower priority, which separates the broker's admission policy from the
CPU the swarm takes from the broker's thread on a small machine.

Target: at least 99% of legitimate calls answered under abuse. Prints answered counts and
shares, the median, p99 and worst latency of answered calls, and the broker's and swarm's
counters. ``--max-connections 256`` holds fewer slots than hostile sockets (as under a 1,024
descriptor limit), so the broker keeps displacing them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from active_memory.recall.broker import (
    MAX_CONNECTIONS,
    MAX_PER_PEER,
    RESERVED_SLOTS,
    BrokerAnswer,
    BrokerLimits,
    BrokerRequest,
    RecallBroker,
)

ABUSE = Path(__file__).resolve().parents[1] / "tests" / "recall" / "abuse.py"
sys.path.insert(0, str(ABUSE.parent))
from abuse import legitimate_call  # noqa: E402

PAYLOAD = {"tool_name": "Read", "tool_input": {"file_path": "src/a.py"}, "session_id": "s"}


class Answer:
    body = b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"x"}}'

    def commit(self) -> None:
        return None

    def release(self) -> None:
        return None


def handler(request: BrokerRequest) -> BrokerAnswer:
    return Answer()


def percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def calls(broker: RecallBroker, count: int, budget_s: float) -> dict[str, list[float | None]]:
    host, port = broker.address
    results: dict[str, list[float | None]] = {"helper frame": [], "http": []}
    for number in range(count):
        http = number % 2 == 1
        elapsed = legitimate_call(host, port, broker.token, PAYLOAD, http=http, budget_s=budget_s)
        results["http" if http else "helper frame"].append(elapsed)
        time.sleep(0.002)
    return results


def report(title: str, results: dict[str, list[float | None]]) -> None:
    print(title)
    every = [value for series in results.values() for value in series]
    for label, series in (*results.items(), ("all", every)):
        answered = [value * 1000 for value in series if value is not None]
        line = f"  {label:<13} answered {len(answered)}/{len(series)}"
        line += f" ({100 * len(answered) / max(1, len(series)):.1f}%)"
        if answered:
            p99 = percentile(answered, 0.99)
            line += f"; median {statistics.median(answered):.2f} ms, p99 {p99:.2f} ms"
            line += f", worst {max(answered):.2f} ms"
        print(line)


def system_python() -> str | None:
    """A Python that other users can run (the venv's may sit in a private home)."""
    return shutil.which("python3", path="/usr/bin:/bin")


def other_users(peers: int) -> list[int]:
    """User ids for a many-peer flood: this needs root on Linux (peers are told apart by user
    there), and none of them the broker's own."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or system_python() is None:
        return []
    return [65534 - number for number in range(peers)]


def flood(
    broker: RecallBroker, args: argparse.Namespace, users: Sequence[int | None]
) -> tuple[int, dict[str, list[float | None]], dict[str, int], list[dict[str, int]]]:
    """Legitimate calls while one swarm per user in ``users`` (None: this user) shares
    ``--each`` sockets of each kind; the broker's connections at the start, the calls, the
    broker's counters and each swarm's."""
    host, port = broker.address
    each = max(1, args.each // len(users))
    seconds = str(60 + args.calls * 0.05)
    swarms = []
    for user in users:
        python = sys.executable if user is None else system_python()
        command = [str(python), str(ABUSE), host, str(port), "--each", str(each),
                   "--seconds", seconds, "--nice", str(args.nice)]  # fmt: skip
        swarms.append(subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, user=user, cwd="/"))  # fmt: skip
    outputs = []
    try:
        for swarm in swarms:
            assert swarm.stdout is not None
            if swarm.stdout.readline().strip() != "ready":
                raise SystemExit("a hostile swarm did not start")
        time.sleep(1.5)  # past the request deadline: the broker is dropping sockets
        held = broker.connection_stats["open"]
        results = calls(broker, args.calls, args.budget_ms / 1000)
        stats = broker.connection_stats
    finally:
        for swarm in swarms:
            assert swarm.stdin is not None
            assert swarm.stdout is not None
            swarm.stdin.close()
            outputs.append(swarm.stdout.read())
            swarm.wait(timeout=60)
    counts = [json.loads(output.splitlines()[-1]) for output in outputs if output.strip()]
    return held, results, stats, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="legitimate calls per phase")
    parser.add_argument("--each", type=int, default=200, help="hostile sockets of each kind")
    parser.add_argument("--nice", type=int, default=0, help="run the swarm at this niceness")
    parser.add_argument(
        "--budget-ms",
        type=float,
        default=150.0,
        help="a call's budget (150: the broker's share with a store fallback)",
    )
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS)
    parser.add_argument("--max-per-peer", type=int, default=MAX_PER_PEER)
    parser.add_argument("--reserved-slots", type=int, default=RESERVED_SLOTS)
    parser.add_argument("--peers", type=int, default=4, help="other users in the many-peer flood")
    args = parser.parse_args()
    limits = BrokerLimits(args.max_connections, args.max_per_peer, args.reserved_slots)
    phases: list[tuple[str, list[int | None]]] = [("same-peer flood (this user)", [None])]
    users = other_users(args.peers)
    if users:
        phases.append((f"many-peer flood ({len(users)} other users)", list(users)))
    with RecallBroker(handler, limits=limits) as broker:
        report("alone", calls(broker, args.calls, args.budget_ms / 1000))
        for title, swarm_users in phases:
            held, results, stats, counts = flood(broker, args, swarm_users)
            sockets = 3 * max(1, args.each // len(swarm_users)) * len(swarm_users)
            report(f"{title}: {sockets} hostile sockets, niceness {args.nice}; broker held "
                   f"{held} at the start", results)  # fmt: skip
            print(f"  broker: {stats}")
            for count in counts:
                print(f"  swarm:  {count}")
    if not users:
        print("many-peer flood skipped: it needs Linux, root and a system python3")


if __name__ == "__main__":
    main()
