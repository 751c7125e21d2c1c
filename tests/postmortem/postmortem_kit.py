"""Shared set-up for postmortem tests: recorded runs as real git checkouts, a store, answers.

``first_run`` is the retry-and-review fixture; ``second_run`` is clean-success as a later commit
of the same repository (a child of the first run's commit), with a delivery manifest naming the
first run's repository lessons, exactly as the demo ships it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.errors import ReplayMismatch
from active_memory.models.changes import Mutation, Publication
from active_memory.models.config import ActiveMemoryConfig, PostmortemConfig, RuntimeConfig
from active_memory.models.lessons import Evidence, GraphScope, LessonDraft, RepositoryScope
from active_memory.models.runs import RunRecord, load_run_record
from active_memory.postmortem.entry import sequential_ids
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import answer_response
from checkouts import materialized
from fixture_runs import RUNS

REPOSITORY = "forge:github.com/example/order-service"
FIRST, SECOND = "retry-and-review", "clean-success"
FIRST_DATE, SECOND_DATE = "1748772000 +0000", "1749376800 +0000"
# The ids sequential_ids() gives the first run's lessons, in publication order.
_ids = sequential_ids()
LESSON_IDS = tuple(_ids() for _ in range(8))
G1, R1, R2 = LESSON_IDS[:3]


def first_run(tmp_path: Path) -> tuple[Path, RunRecord]:
    folder, _ = materialized(RUNS / FIRST, tmp_path / "first", date=FIRST_DATE)
    return folder, load_run_record(folder)


def second_run(tmp_path: Path, first: Path) -> tuple[Path, RunRecord]:
    folder, _ = materialized(
        RUNS / SECOND, tmp_path / "second", parent=first / "checkout", date=SECOND_DATE
    )
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text("utf-8"))
    data["deliveries"] = [
        {"lesson_id": lesson_id, "revision": 1, "node_id": "implement",
         "conversation_id": "conv-implement-1", "channel": "hook",
         "execution": "ex-implement-1", "time_ms": time_ms}
        for lesson_id, time_ms in ((R1, 1748772006000), (R2, 1748772006000))
    ]  # fmt: skip
    run_file.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return folder, load_run_record(folder)


def config_of(
    *,
    graph: bool = True,
    repository: bool = True,
    enabled: bool = True,
    source_node: str | None = None,
    timeout_ms: int = 600_000,
) -> RuntimeConfig:
    return RuntimeConfig(
        active_memory=ActiveMemoryConfig(repository=repository, graph=graph),
        postmortem=PostmortemConfig(
            enabled=enabled, source_node=source_node, timeout_ms=timeout_ms
        ),
    )


def store_at(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "state" / "lessons.sqlite3")


Script = Mapping[tuple[str, int, int], ModelResponse | BaseException | Callable[..., Any]]


def by_labels(script: Script) -> Callable[[ModelRequest], Any]:
    """A ScriptedProvider function answering by ``(specialist, batch, turn)``; an unscripted
    call fails loudly. A callable step is awaited with the request (for delays and events)."""

    async def respond(request: ModelRequest) -> ModelResponse:
        labels = request.labels
        key = (labels.specialist, labels.batch, labels.turn)
        if key not in script:
            raise ReplayMismatch(f"unscripted call {request.labels.describe()}")
        step = script[key]
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ModelResponse):
            return step
        result: ModelResponse = await step(request)
        return result

    return respond


def no_lessons() -> dict[tuple[str, int, int], ModelResponse]:
    """Discovery answers with nothing to propose."""
    return {
        ("graph_discovery", 0, 1): answer_response({"lessons": []}),
        ("repository_discovery", 0, 1): answer_response({"lessons": []}),
    }


def decisions(*items: tuple[str, str]) -> ModelResponse:
    """A maintenance answer: (id, action) pairs with no replacement (keep, retire, defer)."""
    return answer_response(
        {
            "decisions": [
                {"id": lesson_id, "action": action, "reason": "checked against the run",
                 "references": [], "replacement": None}
                for lesson_id, action in items
            ]
        }
    )  # fmt: skip


PADDING = " Keep this in mind whenever the settings or their tests change." * 9


def graph_draft(
    record: RunRecord,
    title: str = "A graph lesson",
    *,
    node: str = "implement",
    padded: bool = False,
) -> LessonDraft:
    advice = "Check the harness environment before editing a failing default test."
    return LessonDraft(
        scope=GraphScope(graph_hash=record.graph_hash, node_id=node),
        title=title,
        recommendation=advice + (PADDING if padded else ""),
        evidence=Evidence(
            run_id="run-earlier", references=("exec:e1",), reason="seen in an earlier run"
        ),
    )


def repository_draft(
    commit: str | None, title: str = "A repository lesson", *, padded: bool = False
) -> LessonDraft:
    advice = "The autouse fixture in tests/conftest.py clears only APP_ variables."
    return LessonDraft(
        scope=RepositoryScope(repository=REPOSITORY, files=("tests/conftest.py",)),
        title=title,
        recommendation=advice + (PADDING if padded else ""),
        evidence=Evidence(
            run_id="run-earlier",
            references=("exec:e1",),
            reason="seen in an earlier run",
            source_commit=commit,
        ),
    )


def seed(store: SqliteStore, *drafts: tuple[str, LessonDraft]) -> None:
    store.publish(
        Publication(
            run_id="seed",
            mutations=tuple(
                Mutation(op="upsert", id=lid, expected_revision=0, draft=d) for lid, d in drafts
            ),
        )
    )


def commit_of(record: RunRecord) -> str:
    assert record.checkout is not None
    assert record.checkout.commit is not None
    return record.checkout.commit


def worker_lesson(title: str = "Trace an unexpected value to its source first") -> dict[str, Any]:
    """A graph discovery lesson admission accepts on the first run."""
    return {
        "title": title,
        "recommendation": "When a test sees a value nothing in the repository sets, search the "
        "environment for its variable before editing the test.",
        "associations": None,
        "node_id": "implement",
        "references": ["exec:ex-implement-1a1", "exec:ex-implement-1a2"],
        "reason": "Two attempts failed on a value injected by the harness environment.",
        "repository_specific": False,
    }


def discovered(*lessons: dict[str, Any]) -> ModelResponse:
    return answer_response({"lessons": list(lessons)})
