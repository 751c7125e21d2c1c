"""Maintenance batches: complete, in id order, bounded by serialized size."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.errors import EvidenceError
from active_memory.models.lessons import Evidence, Lesson, RepositoryScope
from active_memory.postmortem.batching import batch_capacity, card_size, plan_batches
from active_memory.postmortem.entry import sequential_ids

REPOSITORY = "forge:github.com/example/order-service"


def _lesson(lesson_id: str, words: int) -> Lesson:
    return Lesson(
        id=lesson_id,
        revision=1,
        scope=RepositoryScope(repository=REPOSITORY, files=("src/app/config.py",)),
        title="Settings are read once",
        recommendation=("Read settings through load_settings. " * words).strip()[:640],
        evidence=Evidence(run_id="run-1", references=("exec:e1",), reason="observed"),
    )


def _lessons(sizes: list[int]) -> list[Lesson]:
    make = sequential_ids()
    return [_lesson(make(), words) for words in sizes]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=17), max_size=30), st.integers(4096, 20000))
def test_every_lesson_lands_in_exactly_one_batch_within_capacity(
    sizes: list[int], budget: int
) -> None:
    lessons = _lessons(sizes)
    batches = plan_batches(list(reversed(lessons)), budget)
    flat = [lesson.id for batch in batches for lesson in batch]
    assert flat == sorted(lesson.id for lesson in lessons)
    for batch in batches:
        assert batch
        assert sum(card_size(lesson) for lesson in batch) <= batch_capacity(budget)
    # Greedy: a batch closes only when the next lesson would not fit.
    for current, following in itertools.pairwise(batches):
        used = sum(card_size(lesson) for lesson in current)
        assert used + card_size(following[0]) > batch_capacity(budget)


def test_changes_travel_with_their_lesson_and_count_toward_its_size() -> None:
    [lesson] = _lessons([3])
    change = {"id": lesson.id, "before_revision": 1, "current_revision": 2, "change": "revised"}
    assert card_size(lesson, change) > card_size(lesson)
    exact = card_size(lesson)
    assert plan_batches([lesson], exact * 2) == ((lesson,),)
    with pytest.raises(EvidenceError):
        plan_batches([lesson], exact * 2, {lesson.id: change})


def test_a_lesson_too_large_for_any_batch_fails_naming_it() -> None:
    [small, large] = _lessons([1, 17])
    with pytest.raises(EvidenceError, match=large.id):
        plan_batches([small, large], card_size(large) * 2 - 2)


def test_no_lessons_means_no_batches() -> None:
    assert plan_batches([], 128 * 1024) == ()
