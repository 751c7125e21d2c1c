"""Every string a specialist writes is screened: no field of any contract lets a secret, a
person's data or a source position through, and no refusal repeats the value.

The first test walks the four answer contracts and plants a credential in each string they
define, one at a time, in an otherwise admissible answer; whatever stage refuses it, nothing is
accepted. The others pin the stage and code where the field is free text: a decision's reason
(for every action), an adapt's replacement card, a discovery's reason and keyword terms.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from active_memory.admission import load_contract
from active_memory.admission.validate import DiscoveryResult, MaintenanceResult
from active_memory.models.lessons import Lesson

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
)

PASSWORD = "Fake0000mysql"
PLANTED = f"mysql -u app -p{PASSWORD} shop"
Path = tuple[str | int, ...]


def _string_paths(schema: dict[str, Any], path: Path = ()) -> Iterator[Path]:
    """The path of every string an answer may hold (array items at index 0; of an ``anyOf``,
    the object branch)."""
    kind = schema.get("type")
    if kind == "string":
        yield path
    elif kind == "object":
        for name, child in schema["properties"].items():
            yield from _string_paths(child, (*path, name))
    elif kind == "array":
        yield from _string_paths(schema["items"], (*path, 0))
    for branch in schema.get("anyOf", ()):
        yield from _string_paths(branch, path)


def _plant(answer: dict[str, Any], path: Path, value: str) -> dict[str, Any]:
    planted = copy.deepcopy(answer)
    node: Any = planted
    for step in path[:-1]:
        node = node[step]
    last = path[-1]
    if isinstance(last, int):
        node[last:] = [value, *node[last + 1 :]]
    else:
        node[last] = value
    return planted


def _answers() -> dict[str, tuple[dict[str, Any], list[Lesson]]]:
    with_terms = assoc(keyword_groups=[["settings", "cache"]], folders=["src/app"])
    repo = repo_lesson()
    graph = graph_lesson()
    return {
        "repository_discovery": (
            {"lessons": [repo_discovery(associations=with_terms)]},
            [],
        ),
        "graph_discovery": ({"lessons": [graph_discovery()]}, []),
        "repository_maintenance": (
            {
                "decisions": [
                    decision(
                        repo,
                        "adapt",
                        references=["exec:e-build-1", "repository:src/app/config.py"],
                        replacement=replacement(associations=with_terms),
                    )
                ]
            },
            [repo],
        ),
        "graph_maintenance": (
            {
                "decisions": [
                    decision(
                        graph,
                        "adapt",
                        references=["exec:e-build-1"],
                        replacement=graph_replacement(),
                    )
                ]
            },
            [graph],
        ),
    }


def _cases() -> Iterator[tuple[str, Path]]:
    for role in _answers():
        for path in _string_paths(load_contract(role)):
            yield role, path


def _accepted(result: DiscoveryResult | MaintenanceResult) -> int:
    if isinstance(result, DiscoveryResult):
        return len(result.proposals) + len(result.quarantined)
    return len([item for item in result.decisions if item.applied != "defer"])


def _admit(
    discover: Discover,
    maintain: Maintain,
    role: str,
    answer: dict[str, Any],
    supplied: list[Lesson],
) -> DiscoveryResult | MaintenanceResult:
    if supplied:
        return maintain(role, supplied, *answer["decisions"])
    return discover(role, *answer["lessons"])


def test_the_base_answers_are_admitted(discover: Discover, maintain: Maintain) -> None:
    # Graph adapts publish; a repository adapt is deferred for provenance, not refused.
    for role, (answer, supplied) in _answers().items():
        result = _admit(discover, maintain, role, answer, supplied)
        assert result.rejections == (), role
        assert len(result.proposals if isinstance(result, DiscoveryResult) else result.decisions)


@pytest.mark.parametrize(("role", "path"), list(_cases()), ids=lambda v: str(v))
def test_a_credential_in_any_string_of_any_contract_is_not_admitted(
    discover: Discover, maintain: Maintain, role: str, path: Path
) -> None:
    answer, supplied = _answers()[role]
    result = _admit(discover, maintain, role, _plant(answer, path, PLANTED), supplied)
    assert _accepted(result) == 0
    assert result.rejections
    assert PASSWORD not in repr(result.rejections)


# (text, the value no refusal may repeat, stage, code)
FREE_TEXT = [
    (PLANTED, PASSWORD, "secret", "cli_password"),
    ("Das Passwort lautet Fake-Wort-0000 für den Runner.", "Fake-Wort-0000", "secret",
     "password_in_prose"),
    ("Ask alice.martin@acme-corp.com before changing it.", "alice", "personal", "email"),
    ("The venv in /home/alice/shop/.venv was stale.", "alice", "personal", "home_directory"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "value", "stage", "code"), FREE_TEXT)
@pytest.mark.parametrize("action", ["keep", "retire", "defer", "adapt"])
def test_a_decision_reason_is_screened_for_every_action(
    maintain: Maintain, action: str, text: str, value: str, stage: str, code: str
) -> None:
    lesson = graph_lesson()
    adapt = action == "adapt"
    raw = decision(
        lesson,
        action,
        reason=f"Checked against the run: {text}",
        references=["exec:e-build-1"] if adapt else [],
        replacement=graph_replacement() if adapt else None,
    )
    result = maintain("graph_maintenance", [lesson], raw)
    assert only_rejection(result) == (stage, code)
    assert value not in repr(result.rejections)


@pytest.mark.parametrize(("text", "value", "stage", "code"), FREE_TEXT)
@pytest.mark.parametrize("field", ["title", "recommendation"])
def test_an_adapted_replacement_card_is_screened(
    maintain: Maintain, field: str, text: str, value: str, stage: str, code: str
) -> None:
    lesson = repo_lesson()
    raw = decision(
        lesson,
        "adapt",
        references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(**{field: text}),
    )
    assert only_rejection(maintain("repository_maintenance", [lesson], raw)) == (stage, code)


@pytest.mark.parametrize(
    "recommendation",
    [
        "The settings loader moved to src/app/config.py(7); call it from there.",
        "Open it with vim +7 src/app/config.py and call load_settings.",
        "Print it with sed -n '5,7p' src/app/config.py before editing.",
        "La ligne 7 de src/app/config.py appelle load_settings.",
        "The hunk @@ -5,3 +5,4 @@ added the load_settings cache.",
    ],
)
def test_an_adapted_replacement_still_naming_a_position_in_any_form_is_refused(
    maintain: Maintain, recommendation: str
) -> None:
    lesson = repo_lesson()
    raw = decision(
        lesson,
        "adapt",
        references=["exec:e-build-1", "repository:src/app/config.py"],
        replacement=replacement(recommendation=recommendation),
    )
    assert only_rejection(maintain("repository_maintenance", [lesson], raw)) == (
        "card",
        "replacement_has_source_position",
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"reason": "The worker wrote to /Users/bob/shop/cache first."}, "home_directory"),
        ({"title": "Mail ops.lead@acme-shop.io on failures"}, "email"),
        (
            {"associations": assoc(keyword_groups=[["dana@acme-shop.io", "settings"]])},
            "email",
        ),
    ],
)
def test_personal_data_anywhere_in_a_discovery_refuses_it(
    discover: Discover, changes: dict[str, Any], expected: str
) -> None:
    result = discover("repository_discovery", repo_discovery(**changes))
    assert only_rejection(result) == ("personal", expected)


def test_a_phone_number_quarantines_a_discovery_and_defers_a_decision(
    discover: Discover, maintain: Maintain
) -> None:
    phone = "Page the on-call at +44 20 7946 0018 when it fails."
    found = discover("graph_discovery", graph_discovery(reason=phone))
    assert found.rejections == ()
    assert [held.signals for held in found.quarantined] == [("personal:phone",)]
    lesson = graph_lesson()
    kept = maintain("graph_maintenance", [lesson], decision(lesson, reason=phone))
    assert [(d.reason, d.action) for d in kept.downgrades] == [("quarantined", "keep")]


def test_keeping_a_legacy_card_with_personal_data_or_a_new_position_form_is_refused(
    maintain: Maintain,
) -> None:
    personal = repo_lesson(recommendation="Ask carol.ng@acme-shop.io before editing the config.")
    assert only_rejection(maintain("repository_maintenance", [personal], decision(personal))) == (
        "personal",
        "kept_card_has_personal_data",
    )
    numbered = repo_lesson(recommendation="See src/app/config.py(7) for load_settings.")
    assert only_rejection(maintain("repository_maintenance", [numbered], decision(numbered))) == (
        "card",
        "kept_card_has_source_position",
    )
    retired = maintain("repository_maintenance", [personal], decision(personal, "retire"))
    assert retired.rejections == ()
