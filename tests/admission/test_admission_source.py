"""The source stage: citations and associations verified against the real checkout."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from active_memory.admission.validate import AdmissionContext
from active_memory.provenance import GitCheckoutVerifier

from .builders import (
    Discover,
    Maintain,
    assoc,
    decision,
    graph_discovery,
    graph_lesson,
    graph_replacement,
    only_rejection,
    replacement,
    repo_discovery,
    repo_lesson,
    write,
)

CITE = "repository:src/app/config.py"


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"references": ["exec:e-build-1", "repository:src/app/settings.py"]},
         "cited_file_missing"),
        ({"references": ["exec:e-build-1", "repository:build/out.py"]}, "cited_file_ignored"),
        ({"references": ["exec:e-build-1", "repository:debug.log"]}, "cited_file_ignored"),
        ({"references": ["exec:e-build-1", "repository:src/app"]}, "cited_path_not_file"),
        ({"references": ["exec:e-build-1", "repository:ignored-link.py"]}, "cited_file_ignored"),
        ({"references": ["exec:e-build-1", "repository:outside-link.py"]}, "cited_file_missing"),
        ({"references": ["exec:e-build-1"]}, "no_file_citation"),
        ({"associations": assoc(identifiers=["load_config"])}, "identifier_not_in_cited_file"),
        ({"associations": assoc(identifiers=["load_set"])}, "identifier_not_in_cited_file"),
        ({"associations": assoc(files=["src/app/settings.py"])}, "association_file_missing"),
        ({"associations": assoc(files=["build/out.py"])}, "association_file_ignored"),
        ({"associations": assoc(files=["src/app"])}, "association_not_file"),
        ({"associations": assoc(folders=["src/lib"])}, "association_folder_missing"),
        ({"associations": assoc(folders=["build"])}, "association_folder_ignored"),
        ({"associations": assoc(folders=["docs/guide.md"])}, "association_not_folder"),
        ({"associations": assoc(files=[], identifiers=[], keyword_groups=[["cache", "ttl"]])},
         "no_verifiable_association"),
    ],
)  # fmt: skip
def test_repository_discovery_the_checkout_does_not_back_is_rejected(
    discover: Discover, changes: dict[str, Any], code: str
) -> None:
    result = discover("repository_discovery", repo_discovery(**changes))
    assert only_rejection(result) == ("source", code)


def test_identifier_in_an_uncited_file_does_not_count(discover: Discover) -> None:
    # load_settings also occurs in build/out.py (ignored) and is cited nowhere else here.
    item = repo_discovery(
        references=["exec:e-build-1", "repository:src/app/cache.py"],
        associations=assoc(files=["src/app/cache.py"]),
    )
    assert only_rejection(discover("repository_discovery", item)) == (
        "source",
        "identifier_not_in_cited_file",
    )


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"associations": assoc(files=[], folders=["src/app"], identifiers=[])},
        {"associations": assoc(files=["config-link.py"], identifiers=["CACHE_TTL_SECONDS"]),
         "references": ["exec:e-build-1", "repository:config-link.py"]},
        {"associations": assoc(keyword_groups=[["settings", "cache"]])},
    ],
)  # fmt: skip
def test_repository_discovery_backed_by_tracked_source_is_accepted(
    discover: Discover, changes: dict[str, Any]
) -> None:
    result = discover("repository_discovery", repo_discovery(**changes))
    assert result.rejections == ()
    proposal = result.proposals[0].proposal
    assert proposal.draft.scope.kind == "repository"


def test_untracked_but_not_ignored_file_is_current_source(
    discover: Discover, context: AdmissionContext, tmp_path: Path
) -> None:
    from .builders import build_checkout

    root = tmp_path / "checkout"
    build_checkout(root)
    write(root, "src/app/new_flag.py", "ENABLE_FAST_PATH = True\n")
    ctx = replace(context, verifier=GitCheckoutVerifier.open(root))
    item = repo_discovery(
        references=["exec:e-build-1", "repository:src/app/new_flag.py"],
        associations=assoc(files=["src/app/new_flag.py"], identifiers=["ENABLE_FAST_PATH"]),
    )
    assert discover("repository_discovery", item, ctx=ctx).rejections == ()


def test_symlinked_folder_needs_a_visible_target(tmp_path: Path) -> None:
    from .builders import build_checkout

    root = tmp_path / "checkout"
    build_checkout(root)
    (root / "alias").symlink_to("src/app")  # untracked, not ignored: visible
    (root / "build" / "alias").symlink_to("../src/app")  # inside an ignored folder
    verifier = GitCheckoutVerifier.open(root)
    assert verifier.is_tracked_or_unignored("alias/config.py")
    assert verifier.read_text("alias/config.py", 64) is not None
    assert not verifier.is_tracked_or_unignored("build/alias/config.py")
    assert verifier.read_text("build/alias/config.py", 64) is None


def test_verifier_reads_at_most_the_bounded_bytes(checkout: tuple[Path, str]) -> None:
    verifier = GitCheckoutVerifier.open(checkout[0])
    assert verifier.read_text("src/app/config.py", 10) == "CACHE_TTL_"
    assert verifier.read_text("build/out.py", 10) is None
    assert not verifier.exists("/etc/passwd")
    assert not verifier.exists("src/./app/config.py")


def test_no_checkout_means_repository_sources_cannot_be_verified(
    discover: Discover, context: AdmissionContext
) -> None:
    ctx = replace(context, verifier=None)
    assert only_rejection(discover("repository_discovery", repo_discovery(), ctx=ctx)) == (
        "source",
        "no_checkout",
    )
    cited = graph_discovery(references=["exec:e-build-1", CITE])
    assert only_rejection(discover("graph_discovery", cited, ctx=ctx)) == ("source", "no_checkout")
    assert discover("graph_discovery", graph_discovery(), ctx=ctx).rejections == ()


def test_graph_discovery_citing_a_missing_file_is_rejected(discover: Discover) -> None:
    item = graph_discovery(references=["exec:e-build-1", "repository:src/app/gone.py"])
    assert only_rejection(discover("graph_discovery", item)) == ("source", "cited_file_missing")


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"references": ["exec:e-build-1"]}, "no_file_citation"),
        ({"replacement": replacement(associations=assoc(files=["build/out.py"]))},
         "association_file_ignored"),
        ({"replacement": replacement(associations=assoc(identifiers=["reload_all"]))},
         "identifier_not_in_cited_file"),
    ],
)  # fmt: skip
def test_repository_adapt_the_checkout_does_not_back_is_rejected(
    maintain: Maintain, changes: dict[str, Any], code: str
) -> None:
    lesson = repo_lesson()
    base = {"references": [CITE], "replacement": replacement()}
    result = maintain(
        "repository_maintenance", [lesson], decision(lesson, "adapt", **{**base, **changes})
    )
    assert only_rejection(result) == ("source", code)


def test_retiring_a_lesson_whose_file_is_gone_needs_no_citation(maintain: Maintain) -> None:
    scope = repo_lesson().scope.model_copy(update={"files": ("src/app/removed.py",)})
    lesson = repo_lesson(scope=scope)
    result = maintain("repository_maintenance", [lesson], decision(lesson, "retire"))
    assert result.rejections == ()


def test_graph_adapt_citing_current_source_is_accepted(maintain: Maintain) -> None:
    lesson = graph_lesson()
    adapt = decision(
        lesson, "adapt", references=["exec:e-build-1", CITE], replacement=graph_replacement()
    )
    assert maintain("graph_maintenance", [lesson], adapt).rejections == ()
