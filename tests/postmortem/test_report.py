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
from active_memory.postmortem.report_assembly import overall_status


def _report() -> PostmortemReport:
    discovery = SpecialistReport(
        specialist="repository_discovery",
        status="published",
        decisions={"keep": 1},
        downgrades=[DowngradeNote(id="lesson-1", action="adapt", reason="provenance")],
        rejections={"source": 2, "card": 1},
        mutations=1,
        input_tokens=10,
        cache_read_tokens=6,
        cache_write_tokens=3,
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
        "answered_model", "generation_before", "generation_after", "elapsed_ms", "checkout",
        "notes", "specialists", "changes", "quarantined", "totals", "prompt_sha256",
        "contract_sha256",
    }  # fmt: skip
    first = data["specialists"][0]
    assert first["decisions"] == {"keep": 1, "adapt": 0, "retire": 0, "defer": 0}
    assert first["rejections"] == {"card": 1, "source": 2}
    assert first["downgrades"] == [{"id": "lesson-1", "action": "adapt", "reason": "provenance"}]
    assert data["totals"] == {
        "decisions": {"keep": 1, "adapt": 0, "retire": 0, "defer": 0},
        "proposals_accepted": 0, "rejections": {"card": 1, "source": 2}, "mutations": 1,
        "published": 1, "input_tokens": 15, "output_tokens": 0, "cache_read_tokens": 6,
        "cache_write_tokens": 3,
    }  # fmt: skip
    assert data["notes"] == [
        "the checkout is not a git work tree, so repository lessons cannot be verified: "
        "repository proposals are rejected (source:no_checkout) and adapt/retire of "
        "repository lessons are deferred"
    ]
    assert data["prompt_sha256"] == {"graph_maintenance": "ab"}


def test_the_report_totals_each_token_count_as_an_attribute_too() -> None:
    # ``PostmortemReport`` is public (``active_memory.PostmortemReport``): a caller reads the
    # run's token totals off the report as it reads ``retries``, not only from its JSON form.
    report = _report()
    assert (report.input_tokens, report.output_tokens) == (15, 0)
    assert (report.cache_read_tokens, report.cache_write_tokens) == (6, 3)
    assert report.tokens == {
        name: report.model_dump(mode="json")["totals"][name] for name in report.tokens
    }


def test_counts_are_sorted_and_read_only() -> None:
    report = _report()
    counts = report.specialist("repository_discovery").rejections
    assert isinstance(counts, MappingProxyType)
    assert list(counts) == ["card", "source"]
    with pytest.raises(TypeError):
        counts["card"] = 5  # type: ignore[index]
    assert report.rejections == {"card": 1, "source": 2}
    assert report == _report()


def _entry(name: str, status: str, batches: int) -> SpecialistReport:
    return SpecialistReport(specialist=name, status=status, batches=batches)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entries", "status"),
    [
        # Maintenance had no lessons (no session); every discovery with work failed.
        (
            [
                ("graph_maintenance", "nothing_to_do", 0),
                ("repository_maintenance", "nothing_to_do", 0),
                ("graph_discovery", "failed", 1),
                ("repository_discovery", "failed", 0),
            ],
            "failed",
        ),
        # A session that found nothing to change did its work: the failure is partial.
        (
            [
                ("graph_maintenance", "nothing_to_do", 0),
                ("graph_discovery", "nothing_to_do", 1),
                ("repository_discovery", "failed", 1),
            ],
            "partial",
        ),
        (
            [("graph_maintenance", "published", 1), ("graph_discovery", "failed", 1)],
            "partial",
        ),
        ([("graph_discovery", "failed", 1), ("repository_discovery", "skipped", 0)], "failed"),
        (
            [("graph_maintenance", "nothing_to_do", 0), ("graph_discovery", "published", 1)],
            "completed",
        ),
    ],
)
def test_the_postmortem_failed_when_no_specialist_with_work_succeeded(
    entries: list[tuple[str, str, int]], status: str
) -> None:
    reports = [_entry(*entry) for entry in entries]
    assert overall_status(reports, cancelled=False, checkout_changed=False, dry_run=False) == status
