"""Failures outside any specialist (store, provider factory, id source) are report entries."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.base import ModelProvider
from active_memory.models.changes import Publication
from active_memory.models.runs import Binding
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.runlog import RunLog, read_events
from active_memory.store.backend import PublicationControl, PublicationReceipt
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider
from postmortem.postmortem_kit import (
    by_labels,
    config_of,
    discovered,
    first_run,
    store_at,
    worker_lesson,
)

pytestmark = pytest.mark.timeout(20)


class Failing:
    """A backend whose ``snapshot``, ``publish`` or ``generation`` raises ``error``."""

    def __init__(self, store: SqliteStore, method: str, error: Exception) -> None:
        self.store = store
        self.method = method
        self.error = error

    def _maybe_raise(self, method: str) -> None:
        if method == self.method:
            raise self.error

    def snapshot(self, request: Any) -> Any:
        self._maybe_raise("snapshot")
        return self.store.snapshot(request)

    def generation(self) -> int:
        self._maybe_raise("generation")
        return self.store.generation()

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        self._maybe_raise("publish")
        return self.store.publish(publication, control)


def _provider() -> ScriptedProvider:
    return ScriptedProvider(by_labels({("graph_discovery", 0, 1): discovered(worker_lesson())}))


async def _run(tmp_path: Path, backend: Any = None, **kw: Any) -> Any:
    _, record = first_run(tmp_path)
    outcome = record.outcome
    log = RunLog(tmp_path / "log.jsonl")
    options: dict[str, Any] = {"provider": _provider(), "new_id": sequential_ids()}
    options.update(kw)
    report = await run_postmortem(record, PostmortemOptions(
        config=config_of(repository=False), backend=backend or store_at(tmp_path),
        private_dir=tmp_path / "evidence", run_log=log, **options,
    ))  # fmt: skip
    assert record.outcome == outcome
    return report, read_events(tmp_path / "log.jsonl")


def _ran(report: Any) -> dict[str, tuple[str, str | None]]:
    return {
        s.specialist: (s.status, s.error_code) for s in report.specialists if s.status != "skipped"
    }


@pytest.mark.parametrize(
    "error", [ValueError("boom"), sqlite3.OperationalError("disk I/O error")], ids=repr
)
async def test_a_snapshot_that_raises_anything_fails_every_specialist_as_store_error(
    tmp_path: Path, error: Exception
) -> None:
    report, events = await _run(tmp_path, Failing(store_at(tmp_path), "snapshot", error))
    assert report.status == "failed"
    assert set(_ran(report).values()) == {("failed", "store_error")}
    assert type(error).__name__ in (report.reason or "")
    assert events[-1]["reason_code"] == "store_error"


async def test_a_provider_factory_that_raises_a_non_library_error_is_a_provider_error(
    tmp_path: Path,
) -> None:
    def factory(binding: Binding) -> ModelProvider:
        raise RuntimeError("sdk missing")

    report, events = await _run(tmp_path, provider=None, provider_factory=factory)
    assert report.status == "failed"
    assert set(_ran(report).values()) == {("failed", "provider_error")}
    assert "RuntimeError: sdk missing" in (report.reason or "")
    assert {e.get("error_code") for e in events} >= {"provider_error"}


@pytest.mark.parametrize(
    "error", [OSError("disk full"), sqlite3.OperationalError("database is locked")], ids=repr
)
async def test_a_publish_that_raises_anything_fails_the_pending_specialists_as_store_error(
    tmp_path: Path, error: Exception
) -> None:
    store = store_at(tmp_path)
    report, events = await _run(tmp_path, Failing(store, "publish", error))
    assert _ran(report) == {
        "graph_maintenance": ("nothing_to_do", None),
        "graph_discovery": ("failed", "store_error"),
    }
    assert report.status == "failed"  # maintenance had nothing to decide: no session succeeded
    assert report.changes == ()
    assert events[-1]["reason_code"] == "store_error"
    assert all("disk" not in str(e) and "locked" not in str(e) for e in events)
    with store:
        assert store.list_lessons() == ()


async def test_a_generation_that_raises_leaves_only_that_figure_unknown(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    report, _ = await _run(tmp_path, Failing(store, "generation", RuntimeError("closed")))
    assert report.status == "completed"
    assert report.generation_after is None
    assert [c.revision for c in report.changes] == [1]


async def test_an_id_source_that_raises_fails_the_pending_specialists_as_internal_error(
    tmp_path: Path,
) -> None:
    def broken() -> str:
        raise ValueError("id source broken")

    store = store_at(tmp_path)
    report, events = await _run(tmp_path, store, new_id=broken)
    discovery = report.specialist("graph_discovery")
    assert (discovery.status, discovery.error_code) == ("failed", "internal_error")
    assert "ValueError: id source broken" in (discovery.error or "")
    assert events[-1]["reason_code"] == "internal_error"
    with store:
        assert store.list_lessons() == ()


async def test_a_progress_callback_that_raises_does_not_stop_the_review(tmp_path: Path) -> None:
    def progress(name: str, state: str) -> None:
        raise RuntimeError("the host's display is gone")

    report, _ = await _run(tmp_path, on_progress=progress)
    assert report.status == "completed"
    assert [c.revision for c in report.changes] == [1]
