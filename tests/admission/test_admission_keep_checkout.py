"""A repository keep (and an adapt's unchanged associations) is checked against the checkout.

A card whose file, folder or identifier is gone is refused ``source:association_gone`` when the
checkout may supersede it (its source commit is an ancestor of the clean HEAD), and deferred
with the provenance verdict's reason otherwise; a keep with no checkout is deferred, never kept
blindly. The session-scoped checkout of ``conftest`` is only read here.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from active_memory.admission.validate import AdmissionContext, MaintenanceResult
from active_memory.models.lessons import RepositoryScope
from active_memory.provenance import CheckoutState

from .builders import (
    REPO,
    Maintain,
    assoc,
    decision,
    graph_lesson,
    only_rejection,
    replacement,
    repo_lesson,
)

ROLE = "repository_maintenance"


def _card(n: int = 1, commit: str | None = None, **scope: Any) -> Any:
    fields: dict[str, Any] = {"repository": REPO, **scope}
    if not any(fields.get(k) for k in ("files", "folders", "identifiers")):
        fields["files"] = ("src/app/config.py",)
    return repo_lesson(n, source_commit=commit, scope=RepositoryScope(**fields))


def _applied(result: MaintenanceResult) -> list[tuple[str, str]]:
    return [(item.id, item.applied) for item in result.decisions]


@pytest.fixture
def head(checkout: tuple[Path, str]) -> str:
    return checkout[1]


@pytest.mark.parametrize(
    "scope",
    [
        {"files": ("src/app/removed.py",)},
        {"files": ("src/app/config.py", "src/app/removed.py")},
        {"folders": ("src/legacy",)},
        {"files": ("build/out.py",)},  # ignored build output is no authority
        {"files": ("src/app",)},  # a folder where the card says file
        {"files": ("src/app/config.py",), "identifiers": ("load_settings", "parse_settings")},
    ],
    ids=["file", "one of two files", "folder", "ignored file", "not a file", "identifier"],
)
def test_a_keep_of_a_card_whose_association_is_gone_is_refused(
    maintain: Maintain, head: str, scope: dict[str, Any]
) -> None:
    card = _card(commit=head, **scope)
    result = maintain(ROLE, [card], decision(card))
    assert result.complete
    assert only_rejection(result) == ("source", "association_gone")
    assert result.rejections[0].id == card.id
    assert (result.decisions, result.mutations, result.downgrades) == ((), (), ())


def test_a_keep_of_a_card_the_checkout_still_backs_is_kept(maintain: Maintain, head: str) -> None:
    cards = [
        _card(1, head, files=("src/app/config.py",), identifiers=("load_settings",)),
        _card(2, head, folders=("src/app",), identifiers=("CACHE_TTL_SECONDS",)),
        _card(3, None, files=("docs/guide.md",)),  # unknown provenance, yet nothing is gone
        _card(4, head, folders=("src",)),  # too broad for a new card, but it exists
    ]
    result = maintain(ROLE, cards, *(decision(card) for card in cards))
    assert result.rejections == ()
    assert result.downgrades == ()
    assert _applied(result) == [(card.id, "keep") for card in cards]


def test_an_identifier_is_looked_for_in_the_files_the_keep_cites(
    maintain: Maintain, head: str
) -> None:
    card = _card(commit=head, files=("src/app/cache.py",), identifiers=("load_settings",))
    card = card.model_copy(
        update={"evidence": card.evidence.model_copy(update={"references": ("exec:e-old",)})}
    )
    assert only_rejection(maintain(ROLE, [card], decision(card))) == (
        "source",
        "association_gone",
    )
    cited = decision(card, references=["repository:src/app/config.py"])
    assert _applied(maintain(ROLE, [card], cited)) == [(card.id, "keep")]


def test_an_identifier_of_a_folder_card_is_not_called_gone_from_files_not_searched(
    maintain: Maintain, head: str
) -> None:
    # The folder cannot be listed: a miss in the searched files proves nothing about the rest.
    card = _card(commit=head, folders=("src/app",), identifiers=("CACHE_TTL_SECONDS",))
    card = card.model_copy(
        update={"evidence": card.evidence.model_copy(update={"references": ("exec:e-old",)})}
    )
    assert _applied(maintain(ROLE, [card], decision(card))) == [(card.id, "keep")]


def test_an_identifier_is_found_in_the_files_the_card_cited_when_stored(
    maintain: Maintain, head: str
) -> None:
    # repo_lesson's evidence cites repository:src/app/config.py, which defines load_settings.
    card = _card(commit=head, files=("src/app/cache.py",), identifiers=("load_settings",))
    assert _applied(maintain(ROLE, [card], decision(card))) == [(card.id, "keep")]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"commit": None}, "unknown_provenance"),
        ({"clean": False}, "dirty"),
        ({"shallow": True}, "shallow"),
        ({"commit": "0" * 40}, "missing_commit"),
    ],
)
def test_a_gone_association_the_checkout_cannot_prove_is_deferred(
    maintain: Maintain, context: AdmissionContext, head: str, change: dict[str, Any], reason: str
) -> None:
    card = _card(commit=change.pop("commit", head), files=("src/app/removed.py",))
    assert context.checkout is not None
    ctx = replace(context, checkout=replace(context.checkout, **change))
    result = maintain(ROLE, [card], decision(card), ctx=ctx)
    assert result.rejections == ()
    assert _applied(result) == [(card.id, "defer")]
    assert [(d.id, d.action, d.reason) for d in result.downgrades] == [(card.id, "keep", reason)]


@pytest.mark.parametrize(
    ("state", "reason"),
    [(None, "no_checkout"), (CheckoutState(path=Path("."), is_git=False), "not_git")],
)
def test_a_keep_with_no_checkout_to_look_in_is_deferred_not_kept_blindly(
    maintain: Maintain,
    context: AdmissionContext,
    head: str,
    state: CheckoutState | None,
    reason: str,
) -> None:
    card = _card(commit=head)
    ctx = replace(context, checkout=state, verifier=None)
    result = maintain(ROLE, [card], decision(card), ctx=ctx)
    assert result.rejections == ()
    assert _applied(result) == [(card.id, "defer")]
    assert [(d.action, d.reason) for d in result.downgrades] == [("keep", reason)]


def test_a_graph_keep_needs_no_checkout(maintain: Maintain, context: AdmissionContext) -> None:
    card = graph_lesson()
    ctx = replace(context, checkout=None, verifier=None)
    result = maintain("graph_maintenance", [card], decision(card), ctx=ctx)
    assert _applied(result) == [(card.id, "keep")]


def test_an_adapt_that_carries_a_gone_file_over_is_refused_as_gone(
    maintain: Maintain, head: str
) -> None:
    card = _card(commit=head, files=("src/app/config.py", "src/app/removed.py"))
    carried = assoc(files=["src/app/config.py", "src/app/removed.py"])
    adapt = decision(
        card,
        "adapt",
        references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(associations=carried),
    )
    assert only_rejection(maintain(ROLE, [card], adapt)) == ("source", "association_gone")


def test_an_adapt_that_drops_the_gone_file_publishes(maintain: Maintain, head: str) -> None:
    card = _card(commit=head, files=("src/app/config.py", "src/app/removed.py"))
    adapt = decision(
        card,
        "adapt",
        references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(),
    )
    result = maintain(ROLE, [card], adapt)
    assert result.rejections == ()
    assert [(m.op, m.id) for m in result.mutations] == [("upsert", card.id)]


def test_a_new_missing_file_in_an_adapt_keeps_its_own_code(maintain: Maintain, head: str) -> None:
    card = _card(commit=head)
    adapt = decision(
        card,
        "adapt",
        references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(associations=assoc(files=["src/app/config.py", "src/new.py"])),
    )
    assert only_rejection(maintain(ROLE, [card], adapt)) == ("source", "association_file_missing")


def test_a_retire_of_a_card_whose_file_is_gone_publishes(maintain: Maintain, head: str) -> None:
    card = _card(commit=head, files=("src/app/removed.py",))
    result = maintain(ROLE, [card], decision(card, "retire", reason="Its file is gone."))
    assert result.rejections == ()
    assert [(m.op, m.id) for m in result.mutations] == [("retire", card.id)]
