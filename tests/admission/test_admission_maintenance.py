"""What maintenance publishes: mutations at the frozen revision, and host-side downgrades."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from active_memory.admission.validate import AdmissionContext, Downgrade
from active_memory.models.changes import Mutation
from active_memory.models.lessons import GraphScope, RepositoryScope
from active_memory.provenance import GitCheckoutVerifier, inspect_checkout

from .builders import (
    ACTOR,
    REPO,
    Maintain,
    assoc,
    build_checkout,
    commit_all,
    decision,
    graph_lesson,
    graph_replacement,
    replacement,
    repo_lesson,
    write,
)

CITED = ["repository:src/app/config.py"]


def test_accepted_decisions_become_mutations_bound_to_the_supplied_revision(
    maintain: Maintain, checkout: tuple[Path, str]
) -> None:
    _root, head = checkout
    kept, adapted, retired, deferred = (repo_lesson(n, source_commit=head) for n in (1, 2, 3, 4))
    result = maintain(
        "repository_maintenance",
        [kept, adapted, retired, deferred],
        decision(kept),
        decision(
            adapted,
            "adapt",
            references=CITED,
            replacement=replacement(associations=assoc(folders=["src/app"])),
        ),
        decision(retired, "retire"),
        decision(deferred, "defer"),
    )
    assert result.complete
    assert result.rejections == ()
    assert result.downgrades == ()
    assert [(m.op, m.id, m.expected_revision) for m in result.mutations] == [
        ("upsert", adapted.id, 3),
        ("retire", retired.id, 3),
    ]
    draft = result.mutations[0].draft
    assert draft is not None
    assert draft.scope == RepositoryScope(
        repository=REPO,
        files=("src/app/config.py",),
        folders=("src/app",),
        identifiers=("load_settings",),
    )
    assert draft.evidence.run_id == "run-1"
    assert draft.evidence.source_commit == head
    assert draft.evidence.references == tuple(CITED)


def test_graph_adapt_keeps_the_supplied_scope_and_records_no_source(maintain: Maintain) -> None:
    lesson = graph_lesson(node="build")
    adapt = decision(
        lesson, "adapt", references=["exec:e-build-1"], replacement=graph_replacement()
    )
    result = maintain("graph_maintenance", [lesson], adapt)
    assert result.downgrades == ()
    (mutation,) = result.mutations
    assert mutation == Mutation(
        op="upsert", id=lesson.id, expected_revision=2, draft=mutation.draft
    )
    assert mutation.draft is not None
    assert isinstance(mutation.draft.scope, GraphScope)
    assert mutation.draft.scope == lesson.scope
    assert mutation.draft.evidence.source_commit is None


def _downgrades(maintain: Maintain, ctx: AdmissionContext, source_commit: str | None) -> list[str]:
    adapted, retired = repo_lesson(1, source_commit), repo_lesson(2, source_commit)
    result = maintain(
        "repository_maintenance",
        [adapted, retired],
        decision(adapted, "adapt", references=CITED, replacement=replacement()),
        decision(retired, "retire"),
        ctx=ctx,
    )
    assert result.rejections == ()
    assert result.mutations == ()
    assert [d.applied for d in result.decisions] == ["defer", "defer"]
    return sorted({d.reason for d in result.downgrades})


def test_unknown_legacy_provenance_defers_destructive_changes(
    maintain: Maintain, context: AdmissionContext
) -> None:
    assert _downgrades(maintain, context, None) == ["unknown_provenance"]


def test_missing_source_commit_defers_destructive_changes(
    maintain: Maintain, context: AdmissionContext
) -> None:
    assert _downgrades(maintain, context, "0" * 40) == ["missing_commit"]


def test_without_a_checkout_destructive_changes_are_deferred(
    maintain: Maintain, context: AdmissionContext, checkout: tuple[Path, str]
) -> None:
    assert _downgrades(maintain, replace(context, checkout=None), checkout[1]) == ["no_checkout"]


@pytest.fixture
def own_checkout(tmp_path: Path, context: AdmissionContext) -> tuple[Path, str]:
    root = tmp_path / "checkout"
    _repo, head = build_checkout(root)
    return root, head


def _ctx(context: AdmissionContext, root: Path) -> AdmissionContext:
    return replace(
        context, checkout=inspect_checkout(root), verifier=GitCheckoutVerifier.open(root)
    )


def test_dirty_checkout_defers_destructive_changes(
    maintain: Maintain, context: AdmissionContext, own_checkout: tuple[Path, str]
) -> None:
    root, head = own_checkout
    write(root, "docs/guide.md", "# Edited guide\n")
    assert _downgrades(maintain, _ctx(context, root), head) == ["dirty"]


def test_divergent_or_squashed_history_defers_destructive_changes(
    maintain: Maintain, context: AdmissionContext, own_checkout: tuple[Path, str]
) -> None:
    import git

    root, head = own_checkout
    repo = git.Repo(root)
    repo.git.checkout("-b", "side")
    write(root, "docs/side.md")
    side = commit_all(repo, "side work")
    repo.git.checkout("-")
    write(root, "docs/main.md")
    repo.index.add(["docs/main.md"])
    repo.index.commit("main work", author=ACTOR, committer=ACTOR)
    assert _downgrades(maintain, _ctx(context, root), side) == ["divergent"]
    # The recorded commit of the main line is an ancestor: changes publish.
    lesson = repo_lesson(1, head)
    result = maintain(
        "repository_maintenance", [lesson], decision(lesson, "retire"), ctx=_ctx(context, root)
    )
    assert [m.op for m in result.mutations] == ["retire"]


def test_refused_adapt_defers_the_retirements_it_may_have_consolidated(
    maintain: Maintain, checkout: tuple[Path, str]
) -> None:
    head = checkout[1]
    canonical, paraphrase = repo_lesson(1, head), repo_lesson(2, head)
    bad = replacement(recommendation="See src/app/config.py:12 for the defaults.")
    result = maintain(
        "repository_maintenance",
        [canonical, paraphrase],
        decision(canonical, "adapt", references=CITED, replacement=bad),
        decision(paraphrase, "retire"),
    )
    assert [r.code for r in result.rejections] == ["replacement_has_source_position"]
    assert result.mutations == ()
    assert result.downgrades == (
        Downgrade(1, paraphrase.id, "retire", "related_adapt_not_applied"),
    )


def test_graph_maintenance_is_not_gated_by_the_checkout(
    maintain: Maintain, context: AdmissionContext
) -> None:
    lesson = graph_lesson()
    result = maintain(
        "graph_maintenance",
        [lesson],
        decision(lesson, "retire"),
        ctx=replace(context, checkout=None, verifier=None),
    )
    assert [m.op for m in result.mutations] == ["retire"]
