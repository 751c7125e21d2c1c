"""Spotting a reply that loops: one line, or one span, repeated over most of the text."""

from __future__ import annotations

import json

from active_memory.agents.repetition import MIN_REPEATS, find_repetition


def test_a_line_written_over_and_over_is_a_repetition() -> None:
    text = "I will now read the file.\n" * 400

    found = find_repetition(text)

    assert found is not None
    assert (found.span, found.count) == ("I will now read the file.", 400)
    assert found.share == 1.0


def test_a_loop_inside_one_line_is_found_at_the_end_of_the_text() -> None:
    text = '{"lessons": [{"title": "Retry", "references": [' + '"exec:ex-1", ' * 300

    found = find_repetition(text)

    assert found is not None
    assert found.span == '"exec:ex-1", '
    assert found.count == 300
    assert found.share > 0.95


def test_a_long_answer_of_similar_items_is_not_a_repetition() -> None:
    decisions = [
        {"id": f"lesson-01J{index:023d}", "action": "keep", "reason": "Nothing here touches it.",
         "references": [], "replacement": None}
        for index in range(60)
    ]  # fmt: skip
    assert find_repetition(json.dumps({"decisions": decisions})) is None
    assert find_repetition(json.dumps({"decisions": decisions}, indent=2)) is None


def test_a_few_repeats_or_a_repeat_over_a_small_part_are_not_a_loop() -> None:
    assert find_repetition("ok\n" * (MIN_REPEATS - 1)) is None
    varied = "".join(f"Line {index} says something different.\n" for index in range(200))
    assert find_repetition(varied + "same\n" * 20) is None
    assert find_repetition("") is None
    assert find_repetition("   \n\n") is None


def test_the_description_shortens_a_long_span_and_counts_it() -> None:
    found = find_repetition((("word " * 40).strip() + "\n") * 22)

    assert found is not None
    described = found.describe()
    assert described.startswith("'word word")
    assert "…" in described
    assert "22 times (100% of the reply)" in described
