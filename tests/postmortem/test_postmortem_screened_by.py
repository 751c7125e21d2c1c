"""The postmortem publishes only what admission accepted, so it names that screen and the store
does not screen the drafts a second time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from active_memory.models.changes import Publication
from active_memory.store.backend import PublicationControl, PublicationReceipt
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider
from postmortem.postmortem_kit import by_labels, discovered, first_run, store_at, worker_lesson
from postmortem.test_postmortem_settlement import _run

pytestmark = pytest.mark.timeout(20)


class Recording:
    """The store, keeping the control of every publication."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.controls: list[PublicationControl | None] = []

    def snapshot(self, request: Any) -> Any:
        return self.store.snapshot(request)

    def generation(self) -> int:
        return self.store.generation()

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        self.controls.append(control)
        return self.store.publish(publication, control)


async def test_the_postmortem_publishes_naming_admission_as_the_screen(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    backend = Recording(store_at(tmp_path))
    provider = ScriptedProvider(by_labels({("graph_discovery", 0, 1): discovered(worker_lesson())}))
    report, _ = await _run(record, tmp_path, provider, backend)
    assert report.specialist("graph_discovery").status == "published"
    assert [c.screened_by if c else None for c in backend.controls] == ["admission"]
