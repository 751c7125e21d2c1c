"""Failures read from a run record, and the deliveries that reached a conversation first."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.evidence.builder import build_evidence
from active_memory.evidence.failures import deliveries_before_failures, is_rejection, run_failures
from active_memory.models.runs import Delivery, RunRecord, load_run_record
from fixture_runs import RUNS

KEY = "lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B@2"


def test_errored_executions_and_a_verifiers_rejection_are_the_failures() -> None:
    record = load_run_record(RUNS / "retry-and-review")
    found = [(f.execution, f.kind, f.status) for f in run_failures(record)]
    assert found == [
        ("ex-implement-1a1", "execution_error", "error"),
        ("ex-implement-1a2", "execution_error", "timeout"),
        ("ex-review-1", "verifier_rejection", "completed"),
    ]
    assert [r.seq for r in run_failures(record)[0].receipts] == [0, 1, 2, 3, 4]


def test_a_clean_run_has_no_failures() -> None:
    assert run_failures(load_run_record(RUNS / "clean-success")) == ()


@pytest.mark.parametrize(
    ("completion", "rejected"),
    [("REJECT: add it to the table", True), ("**Rejected** - tests fail", True),
     ("changes requested: see above", True), ("APPROVE: flags documented", False),
     ("The change is fine; nothing rejected", False), (None, False)],
)  # fmt: skip
def test_a_rejection_is_the_verdict_the_completion_opens_with(
    completion: str | None, rejected: bool
) -> None:
    assert is_rejection(completion) is rejected


def test_a_card_delivered_to_a_conversation_that_then_failed_is_counted() -> None:
    # KEY reached ex-implement-1a1 (errored) and ex-implement-1a3 (completed); the graph lesson
    # reached the reviewer's prompt, and the reviewer rejected
    assert deliveries_before_failures(load_run_record(RUNS / "retry-and-review")) == {
        KEY: 1, "lesson-01JWKR2B7D5F3H1K9M8N6P4Q2S@1": 1
    }  # fmt: skip
    assert deliveries_before_failures(load_run_record(RUNS / "clean-success")) == {}


def test_maintenance_evidence_says_how_often_a_card_preceded_a_failure(tmp_path: Path) -> None:
    lesson = {
        "id": KEY.split("@")[0],
        "revision": 2,
        "title": "Name new settings with the APP_ prefix",
        "recommendation": "Read new settings from APP_* variables only.",
        "scope": {"kind": "repository", "repository": "forge:github.com/example/x"},
    }
    bundle = build_evidence(
        load_run_record(RUNS / "retry-and-review"), "repository_maintenance",
        private_dir=tmp_path / "private", lessons=[lesson],
    )  # fmt: skip
    entries = {entry["lesson"]: entry for entry in bundle.payload["deliveries"]}
    assert entries[KEY]["before_failures"] == 1


def test_the_field_is_left_out_when_no_card_preceded_a_failure(tmp_path: Path) -> None:
    bundle = build_evidence(
        load_run_record(RUNS / "clean-success"), "repository_maintenance",
        private_dir=tmp_path / "private",
    )  # fmt: skip
    assert bundle.payload["deliveries"]
    assert all("before_failures" not in entry for entry in bundle.payload["deliveries"])


def _one_conversation(prompted: str) -> RunRecord:
    """Three implement attempts in one conversation (two errors, then a success); a card
    delivered by the prompt of the attempt ``prompted``."""
    from impact.impact_kit import Ex, make_run

    attempts = [
        Ex("a1", status="error", conversation="c", calls=(("src/a.py",),) * 5),
        Ex("a2", status="error", conversation="c", calls=(("src/a.py",),) * 5),
        Ex("a3", conversation="c", calls=(("src/a.py",),) * 3),
    ]
    record = make_run("run-1", 1_750_000_000_000, attempts)
    started = {e.id: e.started_ms for e in record.executions}
    prompt = Delivery(lesson_id=KEY.split("@")[0], revision=2, node_id="implement",
                      conversation_id="c", channel="prompt", execution=prompted,
                      time_ms=started[prompted])  # fmt: skip
    return record.model_copy(update={"deliveries": (prompt,)})


def test_a_later_attempts_prompt_is_not_before_an_earlier_attempts_failure() -> None:
    assert deliveries_before_failures(_one_conversation("a3")) == {}


def test_an_attempts_prompt_is_before_that_attempts_own_failure() -> None:
    assert deliveries_before_failures(_one_conversation("a2")) == {KEY: 1}
    assert deliveries_before_failures(_one_conversation("a1")) == {KEY: 1}


def test_a_prompt_delivery_naming_no_execution_is_placed_by_its_time() -> None:
    record = _one_conversation("a3")
    (prompt,) = record.deliveries
    unnamed = prompt.model_copy(update={"execution": None})
    assert deliveries_before_failures(record.model_copy(update={"deliveries": (unnamed,)})) == {}
