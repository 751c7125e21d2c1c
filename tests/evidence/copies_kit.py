"""A run whose one long transcript the budget must cut, for the complete-copy tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from active_memory.models.runs import RunRecord, load_run_record

__all__ = ["FAILURE_RECEIPT", "SECRET", "cut_run"]

FAILURE_RECEIPT = 7
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def cut_run(folder: Path, *, long_records: int, short_records: int = 3) -> RunRecord:
    """Two executions: ``long`` with many big records (the budget must cut it), ``short``
    with a few small ones (it fits whole)."""
    (folder / "t").mkdir(parents=True)
    workspace = str(folder / "shop")
    with (folder / "t/long.jsonl").open("w", encoding="utf-8") as out:
        out.write(json.dumps({"role": "user", "text": "fix the export"}) + "\n")
        for n in range(long_records):
            text = f"step {n} read {workspace}/src/m{n}.py " + "x" * 600
            line: dict[str, Any] = {"role": "assistant", "tool": "Read", "text": text}
            if n == 3:
                line["text"] = f"export TOKEN={SECRET} then it failed: KeyError 'sku'"
                line["receipt"] = FAILURE_RECEIPT
            out.write(json.dumps(line) + "\n")
    with (folder / "t/short.jsonl").open("w", encoding="utf-8") as out:
        for n in range(short_records):
            out.write(json.dumps({"role": "assistant", "text": f"short {n}"}) + "\n")
    executions: list[dict[str, Any]] = [
        {"id": name, "node": "work", "occurrence": i + 1, "attempt": 1, "status": "completed",
         "started_ms": i, "ended_ms": i + 1, "transcript": f"t/{name}.jsonl"}
        for i, name in enumerate(("long", "short"))
    ]  # fmt: skip
    node = {"id": "work", "kind": "worker", "binding": {"provider": "anthropic", "model": "m"}}
    receipt = {"seq": FAILURE_RECEIPT, "execution": "long", "time_ms": 5, "tool": "Read",
               "paths": []}  # fmt: skip
    run = {
        "format": "active-memory/run-record@1",
        "run_id": "copies",
        "graph": {"name": "g", "nodes": [node]},
        "runtime": {"cwd": workspace},
        "executions": executions,
        "receipts": [receipt],
    }
    (folder / "run.json").write_text(json.dumps(run))
    return load_run_record(folder)
