"""The postmortem report's JSON form: what `postmortem --json` prints and hosts read."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from active_memory.postmortem.report import (
    DowngradeNote,
    LessonChange,
    PostmortemReport,
    SpecialistReport,
)


def _report() -> PostmortemReport:
    discovery = SpecialistReport(
        specialist="repository_discovery",
        status="published",
        decisions={"keep": 1},
        downgrades=[DowngradeNote(id="lesson-1", action="adapt", reason="provenance")],
        rejections={"source": 2, "card": 1},
        mutations=1,
        input_tokens=10,
    )
    skipped = SpecialistReport(specialist="graph_maintenance", status="skipped", input_tokens=5)
    change = LessonChange(op="create", id="lesson-2", specialist="repository_discovery",
                          expected_revision=0, revision=1, title="Reload settings")  # fmt: skip
    return PostmortemReport(run_id="run-1", status="completed", specialists=[discovery, skipped],
                            changes=[change], prompt_sha256={"graph_maintenance": "ab"},
                            checkout="not_git")  # fmt: skip


def test_the_json_form_adds_notes_and_totals_and_lists_every_action() -> None:
    data = _report().model_dump(mode="json")
    assert set(data) == {
        "run_id", "status", "reason", "dry_run", "source_node", "provider", "lane", "host", "model",
        "generation_before", "generation_after", "elapsed_ms", "checkout", "notes",
        "specialists", "changes", "quarantined", "totals", "prompt_sha256", "contract_sha256",
    }  # fmt: skip
    first = data["specialists"][0]
    assert first["decisions"] == {"keep": 1, "adapt": 0, "retire": 0, "defer": 0}
    assert first["rejections"] == {"card": 1, "source": 2}
    assert first["downgrades"] == [{"id": "lesson-1", "action": "adapt", "reason": "provenance"}]
    assert data["totals"] == {
        "decisions": {"keep": 1, "adapt": 0, "retire": 0, "defer": 0},
        "proposals_accepted": 0, "rejections": {"card": 1, "source": 2}, "mutations": 1,
        "published": 1, "input_tokens": 15, "output_tokens": 0,
    }  # fmt: skip
    assert data["notes"] == [
        "the checkout is not a git work tree, so repository lessons cannot be verified: "
        "repository proposals are rejected (source:no_checkout) and adapt/retire of "
        "repository lessons are deferred"
    ]
    assert data["prompt_sha256"] == {"graph_maintenance": "ab"}


def test_counts_are_sorted_and_read_only() -> None:
    report = _report()
    counts = report.specialist("repository_discovery").rejections
    assert isinstance(counts, MappingProxyType)
    assert list(counts) == ["card", "source"]
    with pytest.raises(TypeError):
        counts["card"] = 5  # type: ignore[index]
    assert report.rejections == {"card": 1, "source": 2}
    assert report == _report()
