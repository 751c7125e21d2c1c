"""docs/team.md's host example runs as written against a real service."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.repository import repository_key
from active_memory.server import RunningService
from active_memory.store.remote import RemoteBackend
from active_memory.store.select import SERVICE_TOKEN_ENV
from factories import make_draft

DOC = Path(__file__).resolve().parents[2] / "docs" / "team.md"
SHOWN_URL = "https://memory.internal:8765"


def test_the_host_example_opens_a_run_over_the_service(
    running: RunningService, tenant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = DOC.read_text("utf-8")
    after = text[text.index("## Point hosts at it\n") :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match is not None
    example = match.group(1).replace("    ...\n", "    seen = run.lessons\n")
    assert SHOWN_URL in example
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    repository = repository_key(checkout)
    token = running.service.credentials.create(tenant=tenant, repository=repository).token
    monkeypatch.setenv(SERVICE_TOKEN_ENV, token)
    lesson_id = new_lesson_id()
    with RemoteBackend(running.url, token=token) as writer:
        draft = make_draft(repository=repository)
        writer.publish(
            Publication(
                run_id="seed",
                mutations=(Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=draft),),
            )
        )
    namespace: dict[str, Any] = {"run_id": "run-docs", "checkout": checkout}
    exec(compile(example.replace(SHOWN_URL, running.url), str(DOC), "exec"), namespace)
    assert [lesson.id for lesson in namespace["seen"]] == [lesson_id]
