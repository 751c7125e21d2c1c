from __future__ import annotations

from hypothesis import given, settings, strategies as st

from active_memory.evidence.budget import (
    TranscriptBudget,
    cut_text,
    json_size,
    redact_and_cut,
    utf8_len,
)

SECRET = "ghp_EXAMPLEONLYnotarealtoken000000000000"


def test_short_text_is_unchanged() -> None:
    assert cut_text("hello", 100) == ("hello", 0)


def test_cut_keeps_head_and_tail_around_an_explicit_marker() -> None:
    text = "BEGIN " + "x" * 5000 + " END"
    cut, removed = cut_text(text, 300)
    assert json_size(cut) - 2 <= 300
    assert cut.startswith("BEGIN ")
    assert cut.endswith(" END")
    assert f"…[cut {removed} bytes]…" in cut
    assert removed == utf8_len(text) - utf8_len(cut.replace(f"…[cut {removed} bytes]…", ""))


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=0, max_size=3000), limit=st.integers(min_value=0, max_value=2000))
def test_cut_text_never_exceeds_its_limit_in_json(text: str, limit: int) -> None:
    cut, _ = cut_text(text, limit)
    assert json_size(cut) - 2 <= max(limit, 0) or cut == ""


@settings(max_examples=60, deadline=None)
@given(
    before=st.integers(min_value=0, max_value=12_000),
    after=st.integers(min_value=0, max_value=12_000),
    limit=st.integers(min_value=64, max_value=4096),
)
def test_a_secret_never_survives_a_cut_wherever_it_sits(
    before: int, after: int, limit: int
) -> None:
    text = "a " * (before // 2) + SECRET + " b" * (after // 2)
    cut, _ = redact_and_cut(text, limit)
    # No fragment long enough to be useful survives either.
    assert SECRET[:12] not in cut
    assert SECRET[-12:] not in cut


def _add(budget: TranscriptBudget, lane: int, number: int, size: int) -> None:
    budget.add(lane, number=number, role="assistant", tool=None, text="x" * size,
               original_bytes=size, cut_by_pager=False)  # fmt: skip


def test_a_verbose_late_lane_reclaims_its_own_old_records_first() -> None:
    budget = TranscriptBudget(budget_bytes=20_000, record_bytes=4096)
    for lane in range(3):
        for number in range(1, 11):
            _add(budget, lane, number, 300)
    for number in range(1, 2001):
        _add(budget, 3, number, 300)
    assert budget.total <= 20_000
    for lane in range(3):
        stats = budget.stats(lane)
        assert stats is not None
        assert stats.dropped == 0
    verbose = budget.stats(3)
    assert verbose is not None
    assert verbose.dropped > 1900
    entries, _ = budget.excerpt(3)
    numbers = [entry["n"] for entry in entries]
    # The first record (the task) and the latest ones survive; the old middle went.
    assert numbers[0] == 1
    assert numbers[-1] == 2000
    assert numbers[1] > 1900


def test_when_every_lane_is_large_they_end_with_similar_shares() -> None:
    budget = TranscriptBudget(budget_bytes=30_000, record_bytes=4096)
    for lane in range(5):
        for number in range(1, 301):
            _add(budget, lane, number, 200)
    weights = [stats.weight for lane in range(5) if (stats := budget.stats(lane))]
    assert max(weights) - min(weights) <= 2 * 248
    assert sum(weights) <= 30_000


def test_heads_go_last_when_there_are_more_lanes_than_room() -> None:
    budget = TranscriptBudget(budget_bytes=5_000, record_bytes=4096)
    for lane in range(100):
        _add(budget, lane, 1, 200)
    assert budget.total <= 5_000
    kept = [lane for lane in range(100) if budget.excerpt(lane)[0]]
    # Each kept excerpt also pays for its own fields (EXCERPT_BYTES), not only its record.
    assert 5_000 // (200 + 112 + 64) <= len(kept) <= 5_000 // (200 + 112)
