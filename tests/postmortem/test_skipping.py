"""Specialists that cannot succeed on a run are not started; the report says why."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from active_memory.models.runs import RunRecord
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.postmortem.skipping import _an_agent_executed, graph_lessons_delivered
from active_memory.testing import ScriptedProvider, answer_response
from postmortem.postmortem_kit import by_labels, config_of, first_run, store_at

pytestmark = pytest.mark.timeout(30)
NO_LESSONS = {"lessons": []}


async def _run(record: RunRecord, tmp_path: Path, provider: ScriptedProvider) -> PostmortemReport:
    with store_at(tmp_path) as store:
        return await run_postmortem(record, PostmortemOptions(
            config=config_of(), backend=store, private_dir=tmp_path / "evidence",
            provider=provider, new_id=sequential_ids(),
        ))  # fmt: skip


def _asked(provider: ScriptedProvider) -> set[str]:
    return {request.labels.specialist for request in provider.requests}


def _session_run(record: RunRecord) -> RunRecord:
    """The record as a converted harness session describes itself (runtime source, session)."""
    runtime: dict[str, Any] = {**record.runtime, "source": "claude-code", "session_id": "s-1"}
    return record.model_copy(update={"runtime": runtime})


async def test_repository_specialists_are_not_run_without_a_git_checkout(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    shutil.rmtree(folder / "checkout" / ".git")
    provider = ScriptedProvider(by_labels({
        ("graph_discovery", 0, 1): answer_response(NO_LESSONS),
    }))  # fmt: skip

    report = await _run(record, tmp_path, provider)

    assert _asked(provider) == {"graph_discovery"}
    for name in ("repository_discovery", "repository_maintenance"):
        entry = report.specialist(name)
        assert (entry.status, entry.batches, entry.error) == ("skipped", 0, None)
        assert entry.skipped_reason == (
            "not run: the checkout is not a git work tree, so repository lessons cannot be verified"
        )
        assert f"{name} {entry.skipped_reason}" in report.notes
    assert report.status == "completed"
    assert report.specialist("graph_discovery").status == "nothing_to_do"


async def test_repository_specialists_are_not_run_when_the_checkout_is_not_here(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    assert record.checkout is not None
    gone = record.model_copy(
        update={"checkout": record.checkout.model_copy(update={"path": tmp_path / "elsewhere"})}
    )
    provider = ScriptedProvider(by_labels({
        ("graph_discovery", 0, 1): answer_response(NO_LESSONS),
    }))  # fmt: skip

    report = await _run(gone, tmp_path, provider)

    assert _asked(provider) == {"graph_discovery"}
    reason = report.specialist("repository_discovery").skipped_reason
    assert reason is not None
    assert "cannot be verified" in reason


async def test_graph_discovery_is_not_run_on_a_converted_harness_session(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    session = _session_run(record)
    provider = ScriptedProvider(by_labels({
        ("repository_discovery", 0, 1): answer_response(NO_LESSONS),
    }))  # fmt: skip

    report = await _run(session, tmp_path, provider)

    assert _asked(provider) == {"repository_discovery"}
    skipped = report.specialist("graph_discovery")
    assert skipped.status == "skipped"
    assert skipped.skipped_reason == (
        "not run: the run comes from a claude-code session, where no host delivers graph lessons "
        "to a node"
    )
    # Graph maintenance has nothing to decide here, and is not skipped for it.
    assert report.specialist("graph_maintenance").status == "nothing_to_do"
    assert report.specialist("graph_maintenance").skipped_reason is None


def test_a_host_run_delivers_graph_lessons_and_a_session_does_not(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    assert graph_lessons_delivered(record)
    assert not graph_lessons_delivered(_session_run(record))
    # A host may name its harness under "source" without being a converted session.
    host = record.model_copy(update={"runtime": {**record.runtime, "source": "ci"}})
    assert graph_lessons_delivered(host)


async def test_a_scope_turned_off_is_skipped_without_a_reason(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider(by_labels({
        ("graph_discovery", 0, 1): answer_response(NO_LESSONS),
    }))  # fmt: skip
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=config_of(repository=False), backend=store,
            private_dir=tmp_path / "evidence", provider=provider, new_id=sequential_ids(),
        ))  # fmt: skip
    entry = report.specialist("repository_discovery")
    assert (entry.status, entry.skipped_reason) == ("skipped", None)
    assert report.notes == ()


async def test_discovery_is_not_run_when_no_agent_node_executed(tmp_path: Path) -> None:
    """Every execution imported from an earlier run: admission would refuse every lesson
    (``scope:node_not_executed``), so no discovery session is started."""
    _, record = first_run(tmp_path)
    imported = tuple(e.model_copy(update={"imported": True}) for e in record.executions)
    provider = ScriptedProvider(by_labels({}))

    report = await _run(record.model_copy(update={"executions": imported}), tmp_path, provider)

    assert _asked(provider) == set()
    for name in ("graph_discovery", "repository_discovery"):
        entry = report.specialist(name)
        assert entry.status == "skipped"
        assert entry.skipped_reason == (
            "not run: no agent node (a worker or verifier with a model binding) executed in this "
            "run, so no lesson can be attributed to one"
        )


def test_a_session_whose_node_names_no_model_has_no_agent_execution(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    assert _an_agent_executed(record)
    unbound = tuple(node.model_copy(update={"binding": None}) for node in record.graph.nodes)
    graph = record.graph.model_copy(update={"nodes": unbound})
    assert not _an_agent_executed(record.model_copy(update={"graph": graph}))
