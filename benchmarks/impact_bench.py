"""Lesson impact benchmark: ``lessons impact`` over 1,000 runs and 10,000 lessons.

Run: ``python benchmarks/impact_bench.py`` (``--help`` for sizes). It generates a store whose
lessons were published by the runs themselves (a tenth of the runs each publish a chunk, and a
tenth of the lessons are adapted later, so the store as it was at each run's start differs from
the store now) and run records whose tool calls touch the lessons' files, with failed
executions, verifier rejections and hook deliveries. It prints:

* baseline: reading the runs' receipts alone (every ``run.json`` found under the folder, loaded
  and validated, every receipt touched);
* the command: ``active-memory lessons impact --json`` in process (store histories, the same
  reading, both replays, the report and its JSON);
* the ratio of the two (issue 34's goal: at most 10x).

Each figure is the median of ``--repeats`` rounds, the two measured in turn within each round,
in CPU seconds of this process (both run in it): on a shared machine the wall clock of either
varied by half from one round to the next while their CPU time held.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from active_memory.cli.main import main as cli
from active_memory.ledger import load_sources
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.models.runs import (
    AuthoredGraph,
    Delivery,
    Execution,
    GraphNode,
    RunRecord,
    ToolReceipt,
    dump_run_record,
)
from active_memory.store.sqlite import SqliteStore

REPOSITORY = "forge:example.com/acme/app"
GRAPH = AuthoredGraph(
    name="bench",
    nodes=(GraphNode(id="implement", kind="worker"), GraphNode(id="review", kind="verifier")),
)


def lesson_file(n: int) -> str:
    return f"src/module_{n % 500}/file_{n}.py"


def draft(n: int, run_id: str, version: int) -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(
            repository=REPOSITORY, files=(lesson_file(n),), identifiers=(f"handler_{n}",)
        ),
        title=f"Lesson {n} (v{version}) about the retry handler",
        recommendation=f"Call the retry wrapper with a deadline in module {n % 500}.",
        evidence=Evidence(run_id=run_id, references=("exec:e1",), reason="bench"),
    )


def run_id(k: int) -> str:
    return f"bench-run-{k:05d}"


def fill_store(path: Path, lessons: int, runs: int) -> list[str]:
    """Lessons published in chunks by every tenth run; a tenth adapted by later runs."""
    ids = [f"lesson-01JWBENCH{n:017d}" for n in range(lessons)]
    publishers = list(range(0, runs, 10)) or [0]
    chunk = -(-lessons // len(publishers))
    with SqliteStore(path) as store:
        for i, k in enumerate(publishers):
            part = range(i * chunk, min(lessons, (i + 1) * chunk))
            if not part:
                break
            for start in range(part.start, part.stop, 1000):
                mutations = tuple(
                    Mutation(op="upsert", id=ids[n], expected_revision=0,
                             draft=draft(n, run_id(k), 1))
                    for n in range(start, min(part.stop, start + 1000))
                )  # fmt: skip
                store.publish(Publication(run_id=run_id(k), mutations=mutations))
        adapted = range(0, lessons, 10)
        for start in range(0, len(adapted), 1000):
            k = min(runs - 1, runs // 2 + start // 1000)
            mutations = tuple(
                Mutation(op="upsert", id=ids[n], expected_revision=1, draft=draft(n, run_id(k), 2))
                for n in adapted[start : start + 1000]
            )
            store.publish(Publication(run_id=run_id(k), mutations=mutations))
    return ids


def make_run(k: int, ids: list[str], rng: random.Random, start_ms: int) -> RunRecord:
    executions, receipts, deliveries = [], [], []
    seq, clock = 0, start_ms + k * 3_600_000
    for e in range(4):
        node = "review" if e == 3 else "implement"
        status = "error" if rng.random() < 0.2 and node == "implement" else "completed"
        completion = ("REJECT: tests fail" if rng.random() < 0.3 else "APPROVE") if e == 3 else None
        ex_id = f"ex-{e}"
        started = clock
        for c in range(5):
            clock += 1000
            n = rng.randrange(len(ids))
            receipts.append(ToolReceipt(seq=seq, execution=ex_id, time_ms=clock, tool="Read",
                                        paths=(lesson_file(n),)))  # fmt: skip
            if c == 0 and rng.random() < 0.5:
                deliveries.append(
                    Delivery(lesson_id=ids[n], revision=1, node_id=node,
                             conversation_id=f"conv-{e}", channel="hook", execution=ex_id,
                             time_ms=clock, receipt_seq=seq)
                )  # fmt: skip
            seq += 1
        clock += 1000
        executions.append(
            Execution(id=ex_id, node_id=node, occurrence=e + 1, attempt=1, status=status,
                      started_ms=started, ended_ms=clock, conversation_id=f"conv-{e}",
                      completion=completion)
        )  # fmt: skip
    return RunRecord(
        run_id=run_id(k), graph=GRAPH, runtime={}, executions=tuple(executions),
        receipts=tuple(receipts), deliveries=tuple(deliveries),
    )  # fmt: skip


def cpu_seconds(action: Callable[[], object]) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def medians_in_turn(
    first: Callable[[], object], second: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """The median CPU seconds of each, measured one after the other in every round."""
    rounds = [(cpu_seconds(first), cpu_seconds(second)) for _ in range(repeats)]
    return (
        statistics.median(one for one, _ in rounds),
        statistics.median(two for _, two in rounds),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--lessons", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    rng = random.Random(34)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        store = root / "lessons.sqlite3"
        ids = fill_store(store, options.lessons, options.runs)
        runs = root / "runs"
        for k in range(options.runs):
            dump_run_record(make_run(k, ids, rng, 1_750_000_000_000), runs / run_id(k))

        def receipts_alone() -> int:
            sources = load_sources([runs])
            return sum(len(record.receipts) for record in sources.records)

        def command() -> None:
            result = CliRunner().invoke(
                cli, ["lessons", "impact", "--store", str(store), "--runs", str(runs), "--json"]
            )
            if result.exit_code != 0:
                raise SystemExit(f"lessons impact failed: {result.output}")

        calls = receipts_alone()
        baseline, measured = medians_in_turn(receipts_alone, command, options.repeats)
    print(f"lessons impact: {options.runs} runs, {options.lessons} lessons, {calls} tool calls")
    print(f"  reading the runs' receipts alone  {baseline:8.2f} s of CPU")
    print(f"  lessons impact --json             {measured:8.2f} s of CPU")
    print(f"  ratio                             {measured / baseline:8.1f}x (goal: at most 10x)")


if __name__ == "__main__":
    main()
