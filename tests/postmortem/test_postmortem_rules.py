"""When the postmortem runs, what it refuses up front, and how failures stay in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.errors import PostmortemError, ProviderUnavailable
from active_memory.models.runs import AuthoredGraph, Binding, GraphNode, RunRecord
from active_memory.postmortem.binding import resolve_source_node
from active_memory.postmortem.entry import enabled_specialists, run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.runlog import RunLog, read_events
from active_memory.testing import ScriptedProvider, answer_response
from postmortem.postmortem_kit import (
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

pytestmark = pytest.mark.timeout(30)
BINDING = Binding(provider="anthropic", model="claude-test")


async def _run(record: RunRecord, tmp_path: Path, provider: ScriptedProvider, **kw: object):  # type: ignore[no-untyped-def]
    options: dict[str, object] = {"config": config_of(), "new_id": sequential_ids()}
    options.update(kw)
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            backend=store, private_dir=tmp_path / "evidence", provider=provider,
            **options,  # type: ignore[arg-type]
        ))  # fmt: skip
        return report, store.list_lessons()


async def test_both_scopes_off_skips_without_any_provider_call(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider([])
    log = RunLog(tmp_path / "log.jsonl")
    report, lessons = await _run(
        record, tmp_path, provider, config=config_of(graph=False, repository=False), run_log=log
    )
    assert report.status == "skipped"
    assert report.ok
    assert {s.status for s in report.specialists} == {"skipped"}
    assert provider.requests == []
    assert lessons == ()
    assert read_events(tmp_path / "log.jsonl")[-1]["reason_code"] == "off"


async def test_a_disabled_postmortem_is_skipped(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider([])
    report, _ = await _run(record, tmp_path, provider, config=config_of(enabled=False))
    assert report.status == "skipped"
    assert "disabled" in (report.reason or "")
    assert provider.requests == []


def test_a_scope_opt_out_disables_its_maintenance_and_its_discovery() -> None:
    assert enabled_specialists(config_of(repository=False)) == (
        "graph_maintenance", "graph_discovery"
    )  # fmt: skip
    assert enabled_specialists(config_of(graph=False)) == (
        "repository_maintenance", "repository_discovery"
    )  # fmt: skip


async def test_opted_out_scope_runs_nothing_and_is_reported_skipped(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider(
        by_labels({("graph_discovery", 0, 1): answer_response({"lessons": []})})
    )
    report, _ = await _run(record, tmp_path, provider, config=config_of(repository=False))
    assert report.specialist("repository_discovery").status == "skipped"
    assert report.specialist("repository_maintenance").status == "skipped"
    assert [r.labels.specialist for r in provider.requests] == ["graph_discovery"]
    assert report.status == "completed"


async def test_no_latched_outcome_is_refused_before_any_call(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider([])
    with pytest.raises(PostmortemError, match="no latched outcome"):
        await _run(record.model_copy(update={"outcome": None}), tmp_path, provider)
    assert provider.requests == []


@pytest.mark.parametrize(
    ("source", "message"),
    [("deploy", "'deploy' is not a node of graph"), ("collect", "'collect' is a 'join' node")],
)
async def test_unknown_or_non_agent_source_node_is_refused_before_any_call(
    tmp_path: Path, source: str, message: str
) -> None:
    _, record = first_run(tmp_path)
    graph = AuthoredGraph(
        name="g", nodes=(*record.graph.nodes, GraphNode(id="collect", kind="join"))
    )
    provider = ScriptedProvider([])
    with pytest.raises(PostmortemError, match=message):
        await _run(
            record.model_copy(update={"graph": graph}),
            tmp_path,
            provider,
            config=config_of(source_node=source),
        )
    assert provider.requests == []


def test_source_node_defaults_to_the_first_worker_then_the_first_agent_verifier() -> None:
    nodes = (
        GraphNode(id="fanout", kind="map"),
        GraphNode(id="check", kind="verifier", binding=BINDING),
        GraphNode(id="unbound", kind="worker"),
        GraphNode(id="build", kind="worker", binding=BINDING),
    )
    assert resolve_source_node(AuthoredGraph(name="g", nodes=nodes), None).id == "build"
    assert resolve_source_node(AuthoredGraph(name="g", nodes=nodes[:3]), None).id == "check"
    with pytest.raises(PostmortemError, match="no agent node"):
        resolve_source_node(AuthoredGraph(name="g", nodes=nodes[:1]), None)


async def test_specialists_inherit_the_source_node_binding_in_separate_sessions(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider(by_labels(no_lessons()))
    await _run(record, tmp_path, provider, config=config_of(source_node="review"))
    review = record.graph.node("review")
    assert review is not None
    assert review.binding is not None
    assert {(r.model, r.effort) for r in provider.requests} == {
        (review.binding.model, review.binding.effort)
    }
    systems = {r.labels.specialist: r.system for r in provider.requests}
    assert set(systems) == {"graph_discovery", "repository_discovery"}
    assert "graph discovery" in systems["graph_discovery"]


async def test_provider_failures_are_reported_never_raised_and_keep_the_outcome(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    outcome = record.outcome
    provider = ScriptedProvider(
        by_labels(
            {
                ("graph_discovery", 0, 1): ProviderUnavailable("no Anthropic API key: set it"),
                ("repository_discovery", 0, 1): answer_response({"lessons": "nope"}),
                ("repository_discovery", 0, 2): answer_response({"lessons": "still nope"}),
            }
        )
    )
    log = RunLog(tmp_path / "log.jsonl")
    report, lessons = await _run(record, tmp_path, provider, run_log=log)
    assert report.status == "failed"  # both discoveries failed; maintenance had no lessons
    assert not report.ok
    graph = report.specialist("graph_discovery")
    assert (graph.status, graph.error_code) == ("failed", "provider_unavailable")
    assert graph.error == "no Anthropic API key: set it"
    repo = report.specialist("repository_discovery")
    assert (repo.status, repo.error_code) == ("failed", "contract_violation")
    assert "nope" not in (repo.error or "")  # the answer's text never reaches the report
    assert lessons == ()
    assert record.outcome == outcome
    codes = {e.get("error_code") for e in read_events(tmp_path / "log.jsonl")}
    assert {"provider_unavailable", "contract_violation"} <= codes


async def test_a_provider_that_cannot_be_created_fails_every_specialist_in_the_report(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)

    def factory(binding: Binding) -> ScriptedProvider:
        raise ProviderUnavailable(f"no key for {binding.provider}: set ANTHROPIC_API_KEY")

    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=config_of(), backend=store, private_dir=tmp_path / "e",
            provider_factory=factory,
        ))  # fmt: skip
    assert report.status == "failed"
    ran = [s for s in report.specialists if s.status != "skipped"]
    assert {s.error_code for s in ran} == {"provider_unavailable"}


async def test_maintenance_runs_in_complete_batches_each_its_own_session(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    commit = commit_of(record)
    make = sequential_ids(1_700_000_000_000)
    ids = [make() for _ in range(6)]
    with store_at(tmp_path) as store:
        seed(store, *[(i, repository_draft(commit, f"Lesson {i}", padded=True)) for i in ids])
    script = {
        **no_lessons(),
        ("repository_maintenance", 0, 1): decisions(*[(i, "keep") for i in ids[:3]]),
        ("repository_maintenance", 1, 1): decisions(*[(i, "keep") for i in ids[3:]]),
    }
    provider = ScriptedProvider(by_labels(script))
    report, _ = await _run(
        record, tmp_path, provider, config=config_of(graph=False), evidence_budget=7 * 1024
    )
    maintenance = report.specialist("repository_maintenance")
    assert (maintenance.status, maintenance.batches) == ("nothing_to_do", 2)
    assert dict(maintenance.decisions) == {"keep": 6}
    batch_of = {
        r.labels.batch: r.messages[0] for r in provider.requests
        if r.labels.specialist == "repository_maintenance"
    }  # fmt: skip
    assert all(i in str(batch_of[0]) for i in ids[:3])
    assert not any(i in str(batch_of[0]) for i in ids[3:])


async def test_a_failing_batch_fails_the_whole_reconciliation_and_publishes_nothing_of_it(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    make = sequential_ids(1_700_000_000_000)
    ids = [make() for _ in range(6)]
    with store_at(tmp_path) as store:
        seed(store, *[(i, graph_draft(record, f"Lesson {i}", padded=True)) for i in ids])
    script = {
        **no_lessons(),
        ("graph_maintenance", 0, 1): decisions(*[(i, "retire") for i in ids[:3]]),
        # The second batch forgets one id: coverage fails, so the first batch's retirements
        # must not publish either.
        ("graph_maintenance", 1, 1): decisions(*[(i, "keep") for i in ids[3:5]]),
    }
    provider = ScriptedProvider(by_labels(script))
    report, lessons = await _run(
        record, tmp_path, provider, config=config_of(repository=False), evidence_budget=7 * 1024
    )
    maintenance = report.specialist("graph_maintenance")
    assert (maintenance.status, maintenance.error_code) == ("failed", "answer_refused")
    assert dict(maintenance.rejections) == {"coverage": 1}
    assert "coverage:missing_id" in (maintenance.error or "")
    assert {lesson.id for lesson in lessons} == set(ids)
    assert report.status == "partial"
    assert report.changes == ()


async def test_nothing_supplied_means_no_maintenance_call(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider(by_labels(no_lessons()))
    report, _ = await _run(record, tmp_path, provider)
    assert {r.labels.specialist for r in provider.requests} == {
        "graph_discovery", "repository_discovery"
    }  # fmt: skip
    assert report.specialist("graph_maintenance").status == "nothing_to_do"


async def test_destructive_repository_changes_without_provenance_are_deferred(
    tmp_path: Path,
) -> None:
    _, record = first_run(tmp_path)
    make = sequential_ids(1_700_000_000_000)
    legacy = make()
    with store_at(tmp_path) as store:
        seed(store, (legacy, repository_draft(None)))
    provider = ScriptedProvider(
        by_labels({**no_lessons(), ("repository_maintenance", 0, 1): decisions((legacy, "retire"))})
    )
    report, lessons = await _run(record, tmp_path, provider)
    maintenance = report.specialist("repository_maintenance")
    assert dict(maintenance.decisions) == {"defer": 1}
    assert [(d.id, d.action, d.reason) for d in maintenance.downgrades] == [
        (legacy, "retire", "unknown_provenance")
    ]
    assert maintenance.status == "nothing_to_do"
    assert [lesson.id for lesson in lessons] == [legacy]
