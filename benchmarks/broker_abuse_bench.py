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
every 0.5 s), each reconnecting as soon as the broker drops it. Mind ``ulimit -n``: the swarm
holds ``3 × --each`` sockets and the broker at most a quarter of its own limit. ``--nice 10``
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
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from active_memory.recall.broker import (
    MAX_CONNECTIONS,
    MAX_PER_CLIENT,
    BrokerAnswer,
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
    parser.add_argument("--max-per-client", type=int, default=MAX_PER_CLIENT)
    args = parser.parse_args()
    limits = {"max_connections": args.max_connections, "max_per_client": args.max_per_client}
    with RecallBroker(handler, **limits) as broker:
        host, port = broker.address
        budget_s = args.budget_ms / 1000
        report("alone", calls(broker, args.calls, budget_s))
        seconds = str(60 + args.calls * 0.05)
        command = [sys.executable, str(ABUSE), host, str(port), "--each", str(args.each),
                   "--seconds", seconds, "--nice", str(args.nice)]  # fmt: skip
        swarm = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert swarm.stdin is not None
        assert swarm.stdout is not None
        try:
            if swarm.stdout.readline().strip() != "ready":
                raise SystemExit("the hostile swarm did not start")
            time.sleep(1.5)  # past the request deadline: the broker is dropping sockets
            held = broker.connection_stats["open"]
            results = calls(broker, args.calls, budget_s)
            stats = broker.connection_stats
        finally:
            swarm.stdin.close()
            output = swarm.stdout.read()
            swarm.wait(timeout=60)
    title = f"under abuse ({3 * args.each} hostile sockets, niceness {args.nice}; broker held"
    report(f"{title} {held} at the start)", results)
    print(f"  broker: {stats}")
    print(f"  swarm:  {json.loads(output.splitlines()[-1])}")


if __name__ == "__main__":
    main()
