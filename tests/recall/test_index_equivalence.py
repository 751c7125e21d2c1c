"""The index's matching, tables and all, against a plain reading of its scoring rules.

``reference_match`` scores every card by looking at every association of it, with none of the
index's tables: the tiers, the strongest single match, the smallest key on a tie, the order by
score then id. Random stores and random calls from a small vocabulary (so keys are shared by
many cards, groups overlap and ties happen) must match identically through a fresh build, a
build from plain entries and an index restored from its state.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings, strategies as st

from active_memory.limits import BROAD_WORDS
from active_memory.recall.index import (
    SCORE_FILE,
    SCORE_FOLDER,
    SCORE_IDENTIFIER,
    SCORE_KEYWORDS,
    RecallIndex,
)
from active_memory.recall.signals import Signals

REPOSITORY = "forge:example.com/acme/app"
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "the", "code"]  # two are broad
FOLDERS = ["src", "src/api", "src/ap", "lib", "lib/core/deep"]
FILES = ["src/api/a.py", "src/ap/b.py", "lib/core/deep/c.py", "setup.py", "src/api"]
IDENTIFIERS = ["load", "Load", "save_all", "Tool", "read", "parse"]  # "read": broad

Entry = tuple[str, int, str, str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...],
              tuple[tuple[str, ...], ...]]  # fmt: skip


def subsets(values: Sequence[str], most: int) -> st.SearchStrategy[tuple[str, ...]]:
    return st.lists(st.sampled_from(values), max_size=most).map(tuple)


entries_strategy = st.lists(
    st.tuples(
        st.sampled_from([REPOSITORY, REPOSITORY, "forge:example.com/other"]),
        subsets(FILES, 3),
        subsets(FOLDERS, 2),
        subsets(IDENTIFIERS, 3),
        st.lists(subsets(WORDS, 3), max_size=4).map(tuple),
    ),
    max_size=40,
).map(
    lambda drawn: [
        (f"lesson-{number:04d}", number % 3 + 1, f"Card {number}", f"Do {number}.", *fields)
        for number, fields in enumerate(drawn)
    ]
)
signals_strategy = st.builds(
    Signals,
    subsets([*FILES, "src/api/other.py", "lib/core/deep/x/y.py"], 3),
    st.frozensets(st.sampled_from([*IDENTIFIERS, "missing"]), max_size=4),
    st.frozensets(st.sampled_from([*WORDS, "zeta"]), max_size=9),
)


def _folders_of(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:count]) for count in range(1, len(parts) + 1)]


def reference_match(entries: list[Entry], found: Signals) -> list[tuple[str, int, str]]:
    """(id, score, reason) of every matching card of ``REPOSITORY``, in delivery order."""
    results = []
    for lesson_id, _, _, _, key, files, folders, identifiers, groups in entries:
        if key != REPOSITORY:
            continue
        candidates: list[tuple[int, str]] = []
        candidates += [(SCORE_FILE, path) for path in found.paths if path in files]
        candidates += [(SCORE_FOLDER, folder) for path in found.paths
                       for folder in _folders_of(path) if folder in folders]  # fmt: skip
        candidates += [(SCORE_IDENTIFIER, name) for name in found.identifiers
                       if name in identifiers and name.lower() not in BROAD_WORDS]  # fmt: skip
        for group in groups:
            terms = sorted(set(group))
            if len(terms) >= 2 and BROAD_WORDS.isdisjoint(terms) and found.words.issuperset(terms):
                candidates.append((SCORE_KEYWORDS, "+".join(terms)))
        if candidates:
            score, reason = min(candidates, key=lambda pair: (-pair[0], pair[1]))
            results.append((lesson_id, score, reason))
    kinds = {SCORE_FILE: "file", SCORE_FOLDER: "folder", SCORE_IDENTIFIER: "identifier",
             SCORE_KEYWORDS: "keywords"}  # fmt: skip
    results.sort(key=lambda result: (-result[1], result[0]))
    return [(lesson_id, score, f"{kinds[score]} {key}") for lesson_id, score, key in results]


def matched(index: RecallIndex, found: Signals) -> list[tuple[str, int, str]]:
    return [(match.lesson.id, match.score, match.reason) for match in index.match(found)]


@settings(max_examples=300, deadline=None)
@given(entries_strategy, st.lists(signals_strategy, min_size=1, max_size=8))
def test_every_index_matches_as_the_rules_read(entries: list[Entry], calls: list[Signals]) -> None:
    built = RecallIndex.from_entries(entries, repository=REPOSITORY)
    restored = RecallIndex.from_state(built.state())
    unscoped = RecallIndex.from_entries([e for e in entries if e[4] == REPOSITORY])
    # Out of id order (a store gives them in order): ranking must then read the ids.
    reversed_order = RecallIndex.from_entries(entries[::-1], repository=REPOSITORY)
    for found in calls:
        expected = reference_match(entries, found)
        assert matched(built, found) == expected
        assert matched(restored, found) == expected
        assert matched(unscoped, found) == expected
        assert matched(reversed_order, found) == expected


@settings(max_examples=100, deadline=None)
@given(entries_strategy, signals_strategy)
def test_matched_cards_carry_their_own_text(entries: list[Entry], found: Signals) -> None:
    by_id = {entry[0]: entry for entry in entries}
    for match in RecallIndex.from_entries(entries, repository=REPOSITORY).match(found):
        _lesson_id, revision, title, recommendation = by_id[match.lesson.id][:4]
        assert (match.lesson.revision, match.lesson.title, match.lesson.recommendation) == (
            revision, title, recommendation)  # fmt: skip
