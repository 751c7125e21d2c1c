"""Three recorded runs with postmortems over one store, shared by the ledger tests (and the
UI's tests): the first keeps G1 and R1, the second retires R1 and has retiring R2 deferred, the
third (a failed run) keeps R2."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from active_memory.models.runs import RunRecord, load_run_record
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.runlog import RunLog
from active_memory.testing import ScriptedProvider
from checkouts import built_once, copy_built, materialized
from fixture_runs import RUNS
from postmortem.postmortem_kit import (
    SECOND_DATE,
    by_labels,
    commit_of,
    config_of,
    decisions,
    first_run,
    graph_draft,
    no_lessons,
    repository_draft,
    seed,
    store_at,
)

_FOLDERS = ("first", "second", "third")
G1 = "lesson-01JWAG00000000000000000001"
R1 = "lesson-01JWAR00000000000000000001"
R2 = "lesson-01JWAR00000000000000000002"


def _deliver(folder: Path, items: list[tuple[str, str, str]]) -> RunRecord:
    """Rewrite ``folder``'s delivery manifest: (lesson id, execution, channel) at the
    execution's start, to the execution's node and conversation."""
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text("utf-8"))
    executions = {e["id"]: e for e in data["executions"]}
    data["deliveries"] = [
        {"lesson_id": lesson_id, "revision": 1, "node_id": executions[ex]["node"],
         "conversation_id": executions[ex]["conversation_id"], "channel": channel,
         "execution": ex, "time_ms": executions[ex]["started_ms"]}
        for lesson_id, ex, channel in items
    ]  # fmt: skip
    run_file.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return load_run_record(folder)


async def _postmortem(record: RunRecord, folder: Path, tmp_path: Path, script: dict) -> None:  # type: ignore[type-arg]
    with store_at(tmp_path) as store:
        report = await run_postmortem(
            record,
            PostmortemOptions(
                config=config_of(),
                backend=store,
                private_dir=folder / "evidence",
                provider=ScriptedProvider(by_labels(script)),
                run_log=RunLog(folder / "run-log.jsonl"),
                new_id=sequential_ids(),
            ),
        )
    assert report.ok, report.model_dump(mode="json")
    (folder / "report.json").write_text(json.dumps(report.model_dump(mode="json")), "utf-8")


def record_three_runs(tmp_path: Path) -> list[RunRecord]:
    first, record = first_run(tmp_path)
    with store_at(tmp_path) as store:
        seed(
            store,
            (G1, graph_draft(record, "Check the harness environment first")),
            (R1, repository_draft(commit_of(record), "Conftest clears only APP_ variables")),
            (R2, repository_draft(None, "A lesson of unknown provenance")),
        )
    a = _deliver(
        first,
        [(G1, "ex-implement-1a1", "prompt"), (G1, "ex-implement-2", "prompt"),
         (R1, "ex-implement-1a1", "hook")],
    )  # fmt: skip
    asyncio.run(
        _postmortem(
            a, first, tmp_path,
            {**no_lessons(),
             ("graph_maintenance", 0, 1): decisions((G1, "keep")),
             ("repository_maintenance", 0, 1): decisions((R1, "keep"), (R2, "keep"))},
        )
    )  # fmt: skip
    second, _ = materialized(
        RUNS / "clean-success", tmp_path / "second", parent=first / "checkout", date=SECOND_DATE
    )
    b = _deliver(second, [(R1, "ex-implement-1", "hook"), (R2, "ex-implement-1", "hook")])
    asyncio.run(
        _postmortem(
            b, second, tmp_path,
            {**no_lessons(),
             ("repository_maintenance", 0, 1): decisions((R1, "retire"), (R2, "retire"))},
        )
    )  # fmt: skip
    third, _ = materialized(
        RUNS / "map-verbose-reviewer", tmp_path / "third", parent=second / "checkout",
        date="1749981600 +0000",
    )  # fmt: skip
    c = _deliver(third, [(R2, "ex-migrate-01-a1", "hook"), (R2, "ex-migrate-02-a1", "hook")])
    asyncio.run(
        _postmortem(
            c, third, tmp_path,
            {**no_lessons(), ("repository_maintenance", 0, 1): decisions((R2, "keep"))},
        )
    )  # fmt: skip
    return [a, b, c]


def three_runs(destination: Path) -> list[RunRecord]:
    """What ``record_three_runs(destination)`` leaves, built once per test process (three
    postmortems, about a CPU-second) and copied: the ledger reads the same folders and store."""
    template, _ = built_once("ledger-three-runs", record_three_runs)
    copy_built(template, destination, [f"{name}/checkout" for name in _FOLDERS])
    return [load_run_record(destination / name) for name in _FOLDERS]
