"""One specialist session on its own: the raw answer and its admission, never a publication."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest

from active_memory.agents.prompts import prompt_sha256
from active_memory.errors import PostmortemError
from active_memory.models.config import parse_runtime_config
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.specialist_trial import try_specialist
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ReplayProvider, ScriptedProvider, answer_response
from postmortem.postmortem_kit import (
    by_labels,
    commit_of,
    config_of,
    decisions,
    first_run,
    repository_draft,
    second_run,
    seed,
    store_at,
)


async def test_a_replayed_discovery_session_shows_its_answer_and_rejections(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        result = await try_specialist(record, "repository_discovery", PostmortemOptions(
            config=parse_runtime_config(record.runtime), backend=store,
            provider=ReplayProvider(folder / "exchanges.jsonl"), private_dir=tmp_path / "evidence",
        ))  # fmt: skip
        assert store.list_lessons() == ()
    assert result.complete
    assert result.accepted == 2
    assert sorted((r.stage, r.code) for r in result.rejections) == [
        ("card", "source_position"), ("secret", "url_credentials"), ("source", "cited_file_missing")
    ]  # fmt: skip
    assert len(json.loads(result.answer_json)["lessons"]) == 5
    assert (result.turns, result.tool_calls) == (3, 4)
    assert result.prompt_sha256 == prompt_sha256("repository_discovery")
    shown = result.model_dump(mode="json")  # what ``specialist run --json`` prints
    assert shown["answer"] == json.loads(result.answer_json)
    assert "answer_json" not in shown
    assert shown["notes"] == list(result.notes)
    assert shown["rejections"] == [r.model_dump(mode="json") for r in result.rejections]


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


async def test_a_trial_sends_exactly_what_the_postmortem_sends_for_that_batch(
    tmp_path: Path,
) -> None:
    first, _ = first_run(tmp_path)
    _, record = second_run(tmp_path, first)
    commit = commit_of(record)
    make = sequential_ids(1_700_000_000_000)
    ids = [make() for _ in range(6)]
    keep = {
        0: decisions(*[(i, "keep") for i in ids[:3]]),
        1: decisions(*[(i, "keep") for i in ids[3:]]),
    }
    script = {("repository_maintenance", b, 1): answer for b, answer in keep.items()}
    postmortem = ScriptedProvider(
        by_labels({**script, ("repository_discovery", 0, 1): answer_response({"lessons": []})})
    )
    with store_at(tmp_path) as store:
        seed(store, *[(i, repository_draft(commit, f"Lesson {i}", padded=True)) for i in ids])
        shared = PostmortemOptions(
            config=config_of(graph=False), backend=store, private_dir=tmp_path / "evidence",
            provider=postmortem, new_id=sequential_ids(), dry_run=True, evidence_budget=7 * 1024,
        )  # fmt: skip
        report = await run_postmortem(record, shared)
        assert report.specialist("repository_maintenance").batches == 2
        sent = {r.labels.batch: r for r in postmortem.requests if r.labels.specialist ==
                "repository_maintenance"}  # fmt: skip
        for batch in (0, 1):
            trial = ScriptedProvider(by_labels({("repository_maintenance", batch, 1): keep[batch]}))
            options = dataclasses.replace(shared, provider=trial)
            result = await try_specialist(record, "repository_maintenance", options, batch=batch)
            assert (result.batches, result.complete, result.accepted) == (2, True, 3)
            [request] = trial.requests
            assert (request.system, request.messages) == (sent[batch].system, sent[batch].messages)
    # The first batch carries the changes of lessons retired since the run's snapshot.
    assert '"change":"retired"' in str(sent[0].messages[0])
    assert '"change":"retired"' not in str(sent[1].messages[0])


async def test_a_repair_turn_that_times_out_still_shows_what_the_answer_broke(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)

    async def hang(request: object) -> object:
        await asyncio.sleep(60)
        raise AssertionError("unreachable: the deadline stops this call")

    provider = ScriptedProvider(by_labels({
        ("graph_discovery", 0, 1): answer_response({"lessons": "none"}),
        ("graph_discovery", 0, 2): hang,
    }))  # fmt: skip
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        result = await try_specialist(record, "graph_discovery", PostmortemOptions(
            config=config_of(timeout_ms=1_500), backend=store, provider=provider,
            private_dir=tmp_path / "evidence",
        ))  # fmt: skip

    assert (result.status, result.error_code, result.repaired) == ("timed_out", "timed_out", True)
    assert result.contract_errors == ("lessons: 'none' is not of type 'array'",)
    assert result.error is not None
    assert "in the repair turn, after an answer with 1 problem(s) the repair named" in (
        result.error
    )
    assert (result.investigation_max_tokens, result.answer_max_tokens) == (12_288, 16_384)
