"""Evidence budget at scale: how much of the budget each specialist's evidence uses.

Generates plain run records (the public run-record format) of 10 to 100,000 short executions:
a plan, a map of workers (one in nine fails once and is retried; their transcripts read files,
run tests, some fail) and a verifier that rejects once. For each record and specialist it builds
the evidence with the default budget and prints the fill (evidence bytes / budget), how many
executions the evidence lists and how many receipts it keeps. Every row whose input (what of
the record that specialist is shown, whole) is larger than the budget must fill at least 0.9
of it.

Then it times ``graph_discovery`` evidence for the ``retry-and-review`` fixture and for the
same record with an initial input of 50 MB, and prints the time per input megabyte of each and
their ratio (flat: about 1).

    python benchmarks/evidence_scale_bench.py
    python benchmarks/evidence_scale_bench.py --executions 10,1300 --skip-time
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPECIALISTS = ("graph_maintenance", "repository_maintenance", "graph_discovery",
               "repository_discovery")  # fmt: skip
BUDGET = 128 * 1024
FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "retry-and-review"


def _line(role: str, text: str, when: int, **extra: Any) -> str:
    return json.dumps({"role": role, "text": text, "time_ms": when, **extra}) + "\n"


def _worker_lines(index: int, attempt: int, when: int, seq: int) -> tuple[list[str], int]:
    """A worker's transcript; returns the lines and the next receipt seq."""
    module = f"src/app/module_{index % 97}.py"
    fails = attempt == 1 and index % 9 == 4
    lines = [
        _line("user", f"Task: migrate {module} to load_settings(); run its test.", when),
        _line("assistant", f"Reading {module} first.", when + 1),
        _line("assistant", json.dumps({"file_path": module}), when + 2, tool="Read", receipt=seq),
        _line(
            "tool",
            "\n".join(f"{n:6}  value_{n} = os.environ['KEY_{n}']" for n in range(8)),
            when + 3,
            tool="Read",
        ),
        _line(
            "assistant",
            json.dumps({"command": f"pytest tests/test_module_{index % 97}.py"}),
            when + 4,
            tool="Bash",
            receipt=seq + 1,
        ),
    ]
    if fails:
        lines.append(_line("tool", "[error] FAILED tests/test_module.py::test_env - KeyError: "
                           "'FEATURE_FLAGS' leaks from the harness environment", when + 5,
                           tool="Bash"))  # fmt: skip
    else:
        lines.append(_line("tool", "1 passed in 0.03s", when + 5, tool="Bash"))
    lines.append(_line("assistant", "Done: settings read through load_settings().", when + 6))
    return lines, seq + 2


def generate_run(folder: Path, executions: int) -> Path:
    """A run record of ``executions`` executions in ``folder``; returns its run.json."""
    (folder / "transcripts").mkdir(parents=True, exist_ok=True)
    binding = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
    graph = {"name": "scale", "nodes": [
        {"id": "plan", "kind": "worker", "binding": binding},
        {"id": "fan", "kind": "map", "body": "work"},
        {"id": "work", "kind": "worker", "binding": binding},
        {"id": "review", "kind": "verifier", "binding": binding},
    ]}  # fmt: skip
    items: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    seq, when, occurrence = 0, 1_750_000_000_000, 0
    while len(items) < max(1, executions - 1):
        index = len(items)
        node = "plan" if index == 0 else "work"
        occurrence = 1 if index == 0 else occurrence + 1
        attempts = 2 if node == "work" and occurrence % 9 == 4 else 1
        for attempt in range(1, attempts + 1):
            if len(items) >= max(1, executions - 1):
                break
            ident = f"e{len(items)}"
            lines, next_seq = _worker_lines(occurrence, attempt, when, seq)
            for number, tool in ((seq, "Read"), (seq + 1, "Bash")):
                path = f"src/app/module_{occurrence % 97}.py"
                receipts.append({"seq": number, "execution": ident, "time_ms": when + 2,
                                 "tool": tool, "paths": [path]})  # fmt: skip
            seq = next_seq
            name = f"transcripts/{ident}.jsonl"
            (folder / name).write_text("".join(lines))
            failed = attempt == 1 and attempts == 2
            status = "error" if failed else "completed"
            items.append({"id": ident, "node": node, "occurrence": occurrence, "attempt": attempt,
                          "status": status, "started_ms": when, "ended_ms": when + 7,
                          "completion": "migrated", "transcript": name})  # fmt: skip
            when += 10
    if executions > 1:
        review = [
            _line("user", "Review the migration; answer APPROVE or REJECT.", when),
            _line(
                "assistant", "REJECT: module_4 still reads FEATURE_FLAGS at import time.", when + 1
            ),
        ]
        (folder / "transcripts/review.jsonl").write_text("".join(review))
        items.append({"id": "review", "node": "review", "occurrence": 1, "attempt": 1,
                      "status": "completed", "started_ms": when, "ended_ms": when + 2,
                      "completion": "REJECT",
                      "transcript": "transcripts/review.jsonl"})  # fmt: skip
    record = {"format": "active-memory/run-record@1", "run_id": f"scale-{executions}",
              "outcome": {"status": "failed", "latched_ms": when + 5, "summary": "rejected"},
              "initial_input": "Migrate every module to load_settings().", "graph": graph,
              "runtime": {}, "executions": items, "receipts": receipts}  # fmt: skip
    path = folder / "run.json"
    path.write_text(json.dumps(record))
    return path


def input_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def specialist_input(folder: Path, specialist: str) -> int:
    """What of the record this specialist is shown, whole: the graph and the executions, its
    receipts and its transcripts when it receives them (compact JSON)."""
    from active_memory.roles import ROLE_BY_NAME

    needs = ROLE_BY_NAME[specialist]
    document = json.loads((folder / "run.json").read_text())
    shown = {key: document[key] for key in ("graph", "executions", "initial_input")}
    if not needs.completions:
        shown["executions"] = [{k: v for k, v in item.items() if k != "completion"}
                               for item in document["executions"]]  # fmt: skip
    if needs.receipts:
        shown["receipts"] = document["receipts"]
    size = len(json.dumps(shown, separators=(",", ":")))
    if needs.transcripts:
        size += sum(path.stat().st_size for path in (folder / "transcripts").iterdir())
    return size


def fill_rows(executions: int) -> list[dict[str, Any]]:
    from active_memory.evidence.builder import build_evidence
    from active_memory.models.runs import load_run_record

    rows = []
    with tempfile.TemporaryDirectory(prefix="evidence-scale-") as scratch:
        folder = Path(scratch) / "record"
        generate_run(folder, executions)
        record = load_run_record(folder)
        for specialist in SPECIALISTS:
            started = time.perf_counter()
            bundle = build_evidence(record, specialist, private_dir=Path(scratch) / specialist,
                                    budget_bytes=BUDGET)  # fmt: skip
            seconds = time.perf_counter() - started
            rows.append({
                "executions": executions, "specialist": specialist,
                "input": specialist_input(folder, specialist),
                "fill": bundle.size_bytes / BUDGET, "seconds": seconds,
                "listed": len(bundle.payload["executions"]),
                "receipts": len(bundle.payload.get("receipts", [])),
                "receipts_total": bundle.payload["run"]["receipts_total"],
                "excerpts": sum(1 for item in bundle.payload.get("transcripts", [])
                                if item["records"]),
            })  # fmt: skip
    return rows


def _time_per_mb(record_folder: Path, scratch: Path) -> float:
    from active_memory.evidence.builder import build_evidence
    from active_memory.models.runs import load_run_record

    started = time.perf_counter()
    record = load_run_record(record_folder)
    build_evidence(record, "graph_discovery", private_dir=scratch / "private", budget_bytes=BUDGET)
    seconds = time.perf_counter() - started
    return seconds / (input_bytes(record_folder) / (1 << 20))


def time_rows(megabytes: int) -> tuple[float, float]:
    """Seconds per input MB: the fixture, and the fixture with a ``megabytes`` initial input."""
    with tempfile.TemporaryDirectory(prefix="evidence-scale-") as scratch:
        base = Path(scratch) / "base"
        shutil.copytree(FIXTURE, base, ignore=shutil.ignore_patterns("exchanges.jsonl"))
        fixture = _time_per_mb(base, Path(scratch) / "a")
        large = Path(scratch) / "large"
        shutil.copytree(base, large)
        document = json.loads((large / "run.json").read_text())
        sentence = "Migrate the settings loader; keep FEATURE_FLAGS out of tests. "
        document["initial_input"] = sentence * (megabytes * (1 << 20) // len(sentence))
        (large / "run.json").write_text(json.dumps(document))
        big = _time_per_mb(large, Path(scratch) / "b")
    return fixture, big


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", default="10,100,1000,10000,100000")
    parser.add_argument("--input-mb", type=int, default=50, help="the large initial input")
    parser.add_argument("--skip-time", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    short = 0
    print(f"budget {BUDGET} bytes; fill = evidence bytes / budget (>= 0.9 where input > budget)")
    for count in (int(text) for text in args.executions.split(",")):
        for row in fill_rows(count):
            over = row["input"] > BUDGET
            ok = "ok" if not over or row["fill"] >= 0.9 else "SHORT"
            short += ok == "SHORT"
            print(
                f"executions {row['executions']:>6}  {row['specialist']:<22} "
                f"input {row['input'] / BUDGET:8.1f}x budget  fill {row['fill']:.3f} {ok:<5} "
                f"listed {row['listed']:>6}/{row['executions']:<6} "
                f"excerpts {row['excerpts']:>5}  receipts {row['receipts']:>4}"
                f"/{row['receipts_total']:<6}  ({row['seconds']:.2f} s)",
                flush=True,
            )
    if not args.skip_time:
        fixture, big = time_rows(args.input_mb)
        print(
            f"time per input MB: fixture {fixture:.3f} s, {args.input_mb} MB initial_input "
            f"{big:.3f} s; ratio {big / fixture:.2f}"
        )
    if short:
        print(f"{short} rows under 0.9 of the budget")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
