"""One specialist session on its own: the raw answer and its admission, never a publication."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.agents.prompts import prompt_sha256
from active_memory.errors import PostmortemError
from active_memory.models.config import parse_runtime_config
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.specialist_trial import try_specialist
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ReplayProvider
from postmortem.postmortem_kit import first_run


async def test_a_replayed_discovery_session_shows_its_answer_and_rejections(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        result = await try_specialist(record, "repository_discovery", PostmortemOptions(
            config=parse_runtime_config(record.runtime), backend=store,
            provider=ReplayProvider(folder / "exchanges.jsonl"), private_dir=tmp_path / "evidence",
        ))  # fmt: skip
        assert store.list_lessons() == ()
    assert result.complete
    assert result.accepted == 4
    assert sorted((r.stage, r.code) for r in result.rejections) == [
        ("card", "source_position"), ("secret", "url_credentials"), ("source", "cited_file_missing")
    ]  # fmt: skip
    assert len(json.loads(result.answer_json)["lessons"]) == 7
    assert (result.turns, result.tool_calls) == (3, 3)
    assert result.prompt_sha256 == prompt_sha256("repository_discovery")


async def test_a_maintenance_trial_without_lessons_or_with_a_bad_batch_is_an_error(
    tmp_path: Path,
) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        with pytest.raises(PostmortemError, match="no supplied lessons"):
            await try_specialist(record, "graph_maintenance", PostmortemOptions(
                config=parse_runtime_config(record.runtime), backend=store,
                provider=ReplayProvider(folder / "exchanges.jsonl"),
                private_dir=tmp_path / "evidence",
            ))  # fmt: skip
        with pytest.raises(PostmortemError, match="has 1 batch"):
            await try_specialist(record, "graph_discovery", PostmortemOptions(
                config=parse_runtime_config(record.runtime), backend=store,
                provider=ReplayProvider(folder / "exchanges.jsonl"),
                private_dir=tmp_path / "evidence",
            ), batch=3)  # fmt: skip
