"""Which decisions the session's repair turn names: exactly those admission refuses as
``source:association_gone`` (a deferral is not repaired), by id, action and code only."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from active_memory.admission.keep_check import gone_decisions, gone_problems
from active_memory.admission.validate import AdmissionContext
from active_memory.models.lessons import Lesson, RepositoryScope

from .builders import REPO, assoc, decision, replacement, repo_lesson

ROLE = "repository_maintenance"


def _card(n: int, commit: str, *files: str) -> Lesson:
    return repo_lesson(n, source_commit=commit, scope=RepositoryScope(repository=REPO, files=files))


def _answer(*decisions: dict[str, Any]) -> dict[str, Any]:
    return {"decisions": list(decisions)}


def test_a_kept_and_an_adapted_gone_card_are_named_a_live_one_is_not(
    context: AdmissionContext, checkout: tuple[Path, str]
) -> None:
    head = checkout[1]
    gone = _card(1, head, "src/app/removed.py")
    live = _card(2, head, "src/app/config.py")
    carried = _card(3, head, "src/app/config.py", "src/app/removed.py")
    adapt = decision(
        carried,
        "adapt",
        references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(
            associations=assoc(files=["src/app/config.py", "src/app/removed.py"])
        ),
    )
    answer = _answer(decision(gone), decision(live), adapt)
    supplied = [gone, live, carried]
    assert gone_decisions(answer, ROLE, supplied, context) == (
        (gone.id, "keep"),
        (carried.id, "adapt"),
    )
    [first, second] = gone_problems(gone_decisions(answer, ROLE, supplied, context))
    assert first == (
        f"{gone.id}: keep refused (source:association_gone): the card names a file, folder or "
        "identifier the current checkout does not have; adapt the card to what the checkout "
        "has now, or retire it"
    )
    assert second.startswith(f"{carried.id}: adapt refused (source:association_gone)")
    assert "removed.py" not in first + second  # ids and codes, never card text


def test_a_retire_or_a_deferral_needs_no_repair(
    context: AdmissionContext, checkout: tuple[Path, str]
) -> None:
    gone = _card(1, checkout[1], "src/app/removed.py")
    retire = decision(gone, "retire", reason="Its file is gone.")
    assert gone_decisions(_answer(retire), ROLE, [gone], context) == ()
    assert context.checkout is not None
    dirty = replace(context, checkout=replace(context.checkout, clean=False))
    assert gone_decisions(_answer(decision(gone)), ROLE, [gone], dirty) == ()
    assert gone_decisions(_answer(decision(gone)), ROLE, [gone], context) != ()
