"""The card stage: limits (bytes counted in UTF-8), one line, and source positions."""

from __future__ import annotations

from typing import Any

import pytest

from active_memory.screening.positions import find_position

from .builders import (
    IDENT_128,
    IDENT_129,
    LONG_NODE,
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
)

POSITIONS = [
    ("See src/app/config.py:120 before editing defaults.", "file_line"),
    ("The parser in src/app/cache.py:12:5 mishandles empty keys.", "file_line"),
    ("Makefile:14 pins the wrong interpreter.", "file_line"),
    ("The default lives on line 42 of the settings module.", "line_words"),
    ("Lines 10-20 of the cache module hold the eviction rule.", "line_words"),
    ("Read config.py#L10 before changing the loader.", "anchor"),
    ("The retry loop spans L10-L20 in the worker module.", "anchor"),
    ("Check config.py L88 for the fallback.", "anchor"),
]

NOT_POSITIONS = [
    "Permalink: https://github.com/acme/shop/blob/main/src/app/config.py#L10 explains it.",
    "The dev server listens on localhost:8080 and the DB on db.internal:5432.",
    "Use python:3.11 images; the 12:30 cron job rebuilds them.",
    "The L2 cache hit rate drops when load_settings runs per request.",
    "Keep lines short; the first line of the CSV is the header.",
]


@pytest.mark.parametrize(("text", "kind"), POSITIONS)
def test_source_positions_are_found(text: str, kind: str) -> None:
    assert find_position(text) == kind


@pytest.mark.parametrize("text", NOT_POSITIONS)
def test_urls_hosts_versions_and_prose_are_not_positions(text: str) -> None:
    assert find_position(text) is None


@pytest.mark.parametrize("text", [text for text, _ in POSITIONS])
def test_discovered_card_with_a_source_position_is_rejected(discover: Discover, text: str) -> None:
    result = discover("graph_discovery", graph_discovery(recommendation=text))
    assert only_rejection(result) == ("card", "source_position")


def test_position_in_the_title_is_rejected_too(discover: Discover) -> None:
    result = discover("graph_discovery", graph_discovery(title="Fix config.py:12 first"))
    assert only_rejection(result) == ("card", "source_position")


def test_position_in_the_evidence_reason_is_allowed(discover: Discover) -> None:
    result = discover("graph_discovery", graph_discovery(reason="Failed at src/app/config.py:12."))
    assert result.rejections == ()


POSITIONED = repo_lesson(recommendation="Fix the default at src/app/config.py:120 first.")
CITED = ["repository:src/app/config.py"]


def test_keeping_a_legacy_card_with_positions_is_rejected(maintain: Maintain) -> None:
    result = maintain("repository_maintenance", [POSITIONED], decision(POSITIONED))
    assert only_rejection(result) == ("card", "kept_card_has_source_position")


@pytest.mark.parametrize(
    "recommendation",
    [
        "Fix the default at src/app/config.py:121 first.",  # merely renumbered
        "Fix the default on line 121 of src/app/config.py first.",  # respelled
    ],
)
def test_adapting_a_legacy_card_that_keeps_positions_is_rejected(
    maintain: Maintain, recommendation: str
) -> None:
    adapt = decision(
        POSITIONED,
        "adapt",
        references=CITED,
        replacement=replacement(recommendation=recommendation),
    )
    result = maintain("repository_maintenance", [POSITIONED], adapt)
    assert only_rejection(result) == ("card", "replacement_has_source_position")


@pytest.mark.parametrize("action", ["adapt", "defer"])
def test_legacy_card_with_positions_may_be_adapted_to_stable_advice_or_deferred(
    maintain: Maintain, action: str
) -> None:
    changes: dict[str, Any] = {}
    if action == "adapt":
        changes = {"references": CITED, "replacement": replacement()}
    result = maintain(
        "repository_maintenance", [POSITIONED], decision(POSITIONED, action, **changes)
    )
    assert result.rejections == ()
    assert result.decisions[0].decision.action == action


@pytest.mark.parametrize(
    ("action", "changes", "code"),
    [
        ("adapt", {"references": CITED}, "replacement_missing"),
        ("keep", {"replacement": replacement()}, "replacement_unexpected"),
        ("retire", {"replacement": replacement()}, "replacement_unexpected"),
    ],
)
def test_replacement_goes_with_adapt_only(
    maintain: Maintain, action: str, changes: dict[str, Any], code: str
) -> None:
    lesson = repo_lesson()
    result = maintain("repository_maintenance", [lesson], decision(lesson, action, **changes))
    assert only_rejection(result) == ("card", code)


# --- limits: at the limit accepted, one byte (or item) over rejected ----------------------

E2 = "é"  # two UTF-8 bytes


def _title(size: int) -> str:
    return E2 * (size // 2) + "a" * (size % 2)


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"title": _title(97)}, "title_too_long"),
        ({"recommendation": E2 * 320 + "a"}, "recommendation_too_long"),
        ({"reason": E2 * 256 + "a"}, "reason_too_long"),
        ({"title": "Two\nlines"}, "title_not_one_line"),
        ({"recommendation": "tab\tinside"}, "recommendation_not_one_line"),
        ({"title": "   "}, "title_empty"),
        ({"references": ["exec:e-build-1", *[f"graph:{n}" for n in ("plan", "build", "review",
          "unused", "fanout")], "receipt:1", "exec:e-build-2", "receipt:6"]}, "references_count"),
    ],
)  # fmt: skip
def test_graph_card_one_over_a_limit_is_rejected(
    discover: Discover, changes: dict[str, Any], code: str
) -> None:
    result = discover("graph_discovery", graph_discovery(**changes))
    assert only_rejection(result) == ("card", code)


def test_reference_over_300_bytes_is_rejected(discover: Discover) -> None:
    item = graph_discovery(references=["exec:e-build-1", "graph:" + "é" * 147 + "a"])
    assert only_rejection(discover("graph_discovery", item)) == ("references", "reference_too_long")


def test_graph_card_exactly_at_the_limits_is_accepted(discover: Discover) -> None:
    item = graph_discovery(title=_title(96), recommendation=E2 * 320, reason=E2 * 256)
    result = discover("graph_discovery", item)
    assert result.rejections == ()
    draft = result.proposals[0].proposal.draft
    assert len(draft.title.encode()) == 96
    assert len(draft.recommendation.encode()) == 640


def test_node_id_over_128_bytes_is_rejected_at_card(discover: Discover) -> None:
    item = graph_discovery(node_id=LONG_NODE, references=["exec:e-long"])
    assert only_rejection(discover("graph_discovery", item)) == ("card", "node_id_too_long")


MANY = [f"many/f{n:02d}.py" for n in range(33)]
DIRS = [f"dirs/d{n:02d}" for n in range(17)]
LONG_256 = "long/" + "p" * 248 + ".py"
LONG_257 = "long/" + "p" * 249 + ".py"
GROUP = ["settings", "cache"]


@pytest.mark.parametrize(
    ("associations", "code"),
    [
        (assoc(files=MANY), "files_too_many"),
        (assoc(files=[], folders=DIRS), "folders_too_many"),
        (assoc(files=[LONG_257]), "files_too_long"),
        (assoc(identifiers=[IDENT_129]), "identifiers_invalid"),
        (assoc(identifiers=["load_settings", "load_settings"]), "identifiers_duplicate"),
        (assoc(keyword_groups=[GROUP] * 9), "keyword_groups_too_many"),
        (assoc(keyword_groups=[["settings", "cache", "ttl", "evict", "reload"]]),
         "keyword_groups_group_size"),
        (assoc(keyword_groups=[["settings", "c" * 49]]), "keyword_groups_invalid"),
        (assoc(keyword_groups=[["settings", "code"]]), "keyword_groups_too_broad"),
    ],
)  # fmt: skip
def test_repository_card_one_over_an_association_limit_is_rejected(
    discover: Discover, associations: dict[str, Any], code: str
) -> None:
    result = discover("repository_discovery", repo_discovery(associations=associations))
    assert only_rejection(result) == ("card", code)


def test_repository_card_exactly_at_the_association_limits_is_accepted(
    discover: Discover,
) -> None:
    associations = assoc(
        files=[*MANY[:31], LONG_256],
        folders=DIRS[:16],
        identifiers=["load_settings", IDENT_128],
        keyword_groups=[["settings", f"t{n}", "c" * 48, "cache"] for n in range(8)],
    )
    result = discover("repository_discovery", repo_discovery(associations=associations))
    assert result.rejections == ()
    scope = result.proposals[0].proposal.draft.scope
    assert scope.model_dump()["files"][-1] == LONG_256


def test_adapted_replacement_one_byte_over_is_rejected(maintain: Maintain) -> None:
    lesson = graph_lesson()
    adapt = decision(
        lesson,
        "adapt",
        references=["exec:e-build-1"],
        replacement=graph_replacement(title=_title(97)),
    )
    assert only_rejection(maintain("graph_maintenance", [lesson], adapt)) == (
        "card",
        "title_too_long",
    )
    long_reason = decision(lesson, "retire", reason="é" * 256 + "a")
    assert only_rejection(maintain("graph_maintenance", [lesson], long_reason)) == (
        "card",
        "reason_too_long",
    )
