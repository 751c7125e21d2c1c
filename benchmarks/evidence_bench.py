"""Evidence builder: peak memory and time against history size.

Generates native run records whose transcripts total each requested size (streamed to a temp
folder, never held in memory), then builds graph_discovery evidence in a fresh subprocess per
measurement: once plain (wall time, ru_maxrss) and once under tracemalloc (Python peak). The
smallest size is the baseline; the memory bound holds when the peak stays flat as history grows.

The session cases (see ``session_histories.py``) generate one harness session per size instead,
then convert it (the run source) and build the evidence in one fresh subprocess, reporting both
times, the time per MB and ru_maxrss (``--traced`` adds a tracemalloc run). The children cases
(Codex and pi: a parent and 300 child sessions) list every session with ``find_sessions`` and
then convert and build the evidence of each in turn, in the same subprocess: their figures are
for all 301 sessions together, executions and receipts summed.

    python benchmarks/evidence_bench.py                     # native records, 10MB and 1GB
    python benchmarks/evidence_bench.py --sizes 10MB,100MB  # quicker
    python benchmarks/evidence_bench.py --cases sessions --max-mb 1024   # every session case
    python benchmarks/evidence_bench.py --cases claude-subagents,codex-tools --max-mb 100
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from session_histories import CHILD_ROOTS, SESSION_CASES, generate_session

UNITS = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
WORKERS = 24
LONG_LINE_EVERY = 700  # an over-long tool output now and then exercises line cutting


def parse_size(text: str) -> int:
    text = text.strip().upper()
    for unit, factor in UNITS.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def _lines(rng: random.Random, label: str) -> list[bytes]:
    """A pool of realistic lines reused while streaming, so generation stays cheap."""
    pool = []
    for index in range(256):
        role = rng.choice(["assistant", "tool", "tool", "user"])
        size = rng.choice([120, 400, 900, 1800, 3500])
        words = " ".join(f"{label}-{index}-{n}" for n in range(size // 12))
        record: dict[str, Any] = {"role": role, "text": words, "time_ms": 1_700_000_000_000}
        if role == "tool":
            record["tool"] = rng.choice(["Read", "Bash", "Grep", "Edit"])
        pool.append((json.dumps(record) + "\n").encode())
    return pool


def _transcript(path: Path, target: int, rng: random.Random, label: str) -> None:
    pool = _lines(rng, label)
    long_line = (
        json.dumps({"role": "tool", "tool": "Bash", "text": "x" * 200_000}) + "\n"
    ).encode()
    written, count, batch = 0, 0, []
    with path.open("wb") as out:
        while written < target:
            line = long_line if count % LONG_LINE_EVERY == LONG_LINE_EVERY - 1 else rng.choice(pool)
            batch.append(line)
            written += len(line)
            count += 1
            if len(batch) >= 1024:
                out.write(b"".join(batch))
                batch.clear()
        out.write(b"".join(batch))


def generate(folder: Path, total: int) -> None:
    """Workers share 60 % of the bytes; one verbose reviewer writes the other 40 %."""
    rng = random.Random(total)
    (folder / "transcripts").mkdir(parents=True)
    binding = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
    graph = {
        "name": "bench",
        "nodes": [
            {"id": "plan", "kind": "worker", "binding": binding},
            {"id": "fan", "kind": "map", "body": "work"},
            {"id": "work", "kind": "worker", "binding": binding},
            {"id": "review", "kind": "verifier", "binding": binding},
        ],
    }
    executions = []
    for index in range(WORKERS + 1):
        reviewer = index == WORKERS
        name = f"transcripts/{index:03d}.jsonl"
        share = total * 4 // 10 if reviewer else total * 6 // 10 // WORKERS
        _transcript(folder / name, share, rng, "review" if reviewer else f"work{index}")
        executions.append({
            "id": f"e{index}", "node": "review" if reviewer else "work",
            "occurrence": 1 if reviewer else index + 1, "attempt": 1, "status": "completed",
            "started_ms": index, "ended_ms": index + 1, "completion": "done " * 200,
            "transcript": name,
        })  # fmt: skip
    receipts = [{"seq": i, "execution": f"e{i % WORKERS}", "time_ms": i, "tool": "Read",
                 "paths": [f"src/app/module_{i % 50}.py"]} for i in range(2000)]  # fmt: skip
    record = {"format": "active-memory/run-record@1", "run_id": "bench", "graph": graph,
              "runtime": {"apiKey": "not-a-key"}, "executions": executions,
              "receipts": receipts}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(record))


def child(record: str, budget: int, traced: bool) -> None:
    from active_memory.evidence.builder import build_evidence
    from active_memory.models.runs import load_run_record

    loaded = load_run_record(record)
    if traced:
        tracemalloc.start()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as private:
        bundle = build_evidence(loaded, "graph_discovery", private_dir=private, budget_bytes=budget)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1] if traced else 0
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kept = sum(1 for item in bundle.payload["transcripts"] if item["records"])
    print(json.dumps({"seconds": seconds, "peak": peak, "maxrss_kb": maxrss_kb,
                      "size": bundle.size_bytes, "kept": kept}))  # fmt: skip


def session_child(session: str, budget: int, traced: bool, children: str | None = None) -> None:
    from active_memory.evidence.builder import build_evidence
    from active_memory.evidence.inventory import find_sessions
    from active_memory.evidence.sources import load_session

    if traced:
        tracemalloc.start()
    totals = {"convert_s": 0.0, "build_s": 0.0, "size": 0, "executions": 0, "kept": 0,
              "receipts": 0, "sessions": 0}  # fmt: skip
    if children is None:
        paths = [Path(session)]
    else:
        listed = find_sessions({children: Path(session)}, now=time.time() + 3600)
        paths = [Path(entry.path) for entry in listed if entry.reviewable]
    for path in paths:
        with tempfile.TemporaryDirectory() as scratch:
            started = time.perf_counter()
            record = load_session(path, Path(scratch) / "record")
            converted = time.perf_counter()
            private = Path(scratch) / "private"
            bundle = build_evidence(record, "graph_discovery", private_dir=private,
                                    budget_bytes=budget)  # fmt: skip
            built = time.perf_counter()
        totals["convert_s"] += converted - started
        totals["build_s"] += built - converted
        totals["size"] = max(totals["size"], bundle.size_bytes)
        totals["executions"] += len(record.executions)
        totals["kept"] += sum(1 for item in bundle.payload["transcripts"] if item["records"])
        totals["receipts"] += bundle.payload["run"]["receipts_total"]
        totals["sessions"] += 1
    peak = tracemalloc.get_traced_memory()[1] if traced else 0
    maxrss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({**totals, "peak": peak, "maxrss_kb": maxrss_kb}))


def measure(
    record: Path, budget: int, traced: bool, session: bool = False, children: str | None = None
) -> dict[str, Any]:
    flag = "--child-session" if session else "--child"
    command = [sys.executable, __file__, flag, str(record), "--budget", str(budget)]
    if children is not None:
        command += ["--children", children]
    if traced:
        command.append("--traced")
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(output)
    return result


def _native(sizes: list[int], args: argparse.Namespace) -> None:
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="evidence-bench-") as scratch:
            folder = Path(scratch) / "record"
            started = time.perf_counter()
            generate(folder, size)
            generated = time.perf_counter() - started
            history = sum(path.stat().st_size for path in (folder / "transcripts").iterdir())
            repeat = args.repeat if size <= 100 * UNITS["MB"] else 1
            plain = [measure(folder, args.budget, traced=False) for _ in range(repeat)]
            traced = [measure(folder, args.budget, traced=True) for _ in range(repeat)]
        times = sorted(run["seconds"] for run in plain)
        row = {
            "history": history,
            "generate_s": generated,
            "median_s": statistics.median(times),
            "p99_s": times[-1],
            "mb_per_s": history / statistics.median(times) / UNITS["MB"],
            "peak": statistics.median(run["peak"] for run in traced),
            "maxrss": statistics.median(run["maxrss_kb"] for run in plain) * 1024,
            "size": plain[0]["size"],
            "kept": plain[0]["kept"],
            "runs": repeat,
        }
        rows.append(row)
        mib = UNITS["MB"]
        print(
            f"history {row['history'] / mib:9.1f} MiB  runs {repeat}  "
            f"build median {row['median_s']:7.2f} s  p99 {row['p99_s']:7.2f} s  "
            f"({row['mb_per_s']:6.1f} MiB/s)  tracemalloc peak {row['peak'] / mib:6.2f} MiB  "
            f"maxrss {row['maxrss'] / mib:6.1f} MiB  evidence {row['size']} B  "
            f"excerpts {row['kept']}/{WORKERS + 1}  (generated in {row['generate_s']:.1f} s)",
            flush=True,
        )
    base = rows[0]
    for row in rows[1:]:
        print(
            f"ratio {row['history'] / base['history']:7.1f}x history: "
            f"tracemalloc peak x{row['peak'] / base['peak']:.2f}, "
            f"maxrss x{row['maxrss'] / base['maxrss']:.2f}, "
            f"time x{row['median_s'] / base['median_s']:.1f}"
        )


def _sessions(case: str, sizes: list[int], args: argparse.Namespace) -> None:
    mib = UNITS["MB"]
    rows = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="evidence-bench-") as scratch:
            started = time.perf_counter()
            home = Path(scratch) / "home"
            session = generate_session(case, home, size)
            generated = time.perf_counter() - started
            history = sum(p.stat().st_size for p in home.rglob("*.jsonl"))
            harness, below = CHILD_ROOTS.get(case, (None, ""))
            target = home / below if harness else session
            run = measure(target, args.budget, traced=False, session=True, children=harness)
            traced = (measure(target, args.budget, traced=True, session=True, children=harness)
                      if args.traced else {})  # fmt: skip
        seconds = run["convert_s"] + run["build_s"]
        row = {"history": history, "seconds": seconds, "maxrss": run["maxrss_kb"] * 1024,
               "peak": traced.get("peak", 0)}  # fmt: skip
        rows.append(row)
        peak = f"  tracemalloc peak {row['peak'] / mib:6.2f} MiB" if args.traced else ""
        print(
            f"{case:<17} history {history / mib:7.1f} MiB  convert {run['convert_s']:7.2f} s  "
            f"build {run['build_s']:5.2f} s  ({seconds / (history / mib) * 1000:5.1f} ms/MiB)  "
            f"maxrss {row['maxrss'] / mib:5.1f} MiB{peak}  evidence {run['size']} B  "
            f"sessions {run['sessions']}  executions {run['executions']} (excerpts {run['kept']})  "
            f"receipts {run['receipts']}  (generated in {generated:.1f} s)",
            flush=True,
        )
    base = rows[0]
    for row in rows[1:]:
        extra = f", tracemalloc peak x{row['peak'] / base['peak']:.2f}" if args.traced else ""
        print(
            f"{case:<17} ratio {row['history'] / base['history']:6.1f}x history: "
            f"maxrss x{row['maxrss'] / base['maxrss']:.2f}{extra}, "
            f"time x{row['seconds'] / base['seconds']:.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10MB,1GB")
    parser.add_argument("--max-mb", type=int,
                        help="measure 10MB and this many MB (1024: the 1 GB case)")  # fmt: skip
    parser.add_argument("--cases", default="native",
                        help="native, sessions (every session case) or a comma list of "
                        f"{', '.join(SESSION_CASES)}")  # fmt: skip
    parser.add_argument("--budget", type=int, default=128 * 1024)
    parser.add_argument("--repeat", type=int, default=3, help="runs per size up to 100MB")
    parser.add_argument("--child")
    parser.add_argument("--child-session")
    parser.add_argument("--children", help="(child) list this harness's sessions under the folder")
    parser.add_argument("--traced", action="store_true", help="sessions: add a tracemalloc run")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.budget, args.traced)
        return
    if args.child_session:
        session_child(args.child_session, args.budget, args.traced, args.children)
        return
    sizes = [parse_size(text) for text in args.sizes.split(",")]
    if args.max_mb:
        sizes = [10 * UNITS["MB"], args.max_mb * UNITS["MB"]]
    cases = SESSION_CASES if args.cases == "sessions" else tuple(args.cases.split(","))
    for case in cases:
        if case == "native":
            _native(sizes, args)
        elif case in SESSION_CASES:
            _sessions(case, sizes, args)
        else:
            parser.error(f"unknown case {case!r}; choose native or one of {SESSION_CASES}")


if __name__ == "__main__":
    main()
