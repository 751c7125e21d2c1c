"""Resident inverted indexes over a frozen snapshot, and deterministic scoring.

Built once per run (or per store generation for ``serve``; a run start loads it from the file
:mod:`active_memory.recall.index_file` kept for the same rows); matching is dictionary lookups:
no model call, network access or filesystem scan. A card's score is its strongest single match:

    exact root-relative file   1000
    containing folder           800   (component-aware: ``src/ab`` is not inside ``src/a``)
    exact whole identifier      700
    every term of one keyword group  500

Repeated words add nothing and a broad word alone never retrieves a card. Results are ordered by
score (highest first), then lesson id.

Cards are read through the protocols of :mod:`active_memory.recall.card`: any object with the
lesson's attributes will do. :meth:`RecallIndex.state` gives the repository part as plain
builtins and :meth:`RecallIndex.from_state` takes it back, so the hook fallback can cache a
built index instead of rebuilding it on every tool call.

Standard library and ``active_memory.limits`` only, no ``dataclasses`` or ``typing`` at run
time: the hook helper's store fallback imports it on every tool call.
"""

from __future__ import annotations

import gc
import sys

from active_memory.limits import BROAD_WORDS
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from typing import Protocol, TypeAlias

    from active_memory.recall.card import RecallCard, ScopedCard
    from active_memory.recall.signals import Signals

    # key -> its one position, or its positions in order (a list once a second one comes)
    Postings: TypeAlias = dict[str, int | list[int]]
    # A pair (its two terms are the keys it waits under) is its card's position; a longer group
    # is (position, all terms). One waiting under its two keys, or a list once a second one comes.
    GroupEntry: TypeAlias = int | tuple[int, tuple[str, ...]]
    # rarest term -> second rarest term -> the group or groups waiting there
    Groups: TypeAlias = dict[str, dict[str, GroupEntry | list[GroupEntry]]]
    # rarest term -> (the second terms waiting under it, the groups by second term)
    Seconds: TypeAlias = dict[str, tuple[frozenset[str], dict[str, GroupEntry | list[GroupEntry]]]]
    # ids, revisions, titles, recommendations: columns load faster than a tuple per card
    CardColumns: TypeAlias = tuple[Sequence[str], Sequence[int], Sequence[str], Sequence[str]]
    CardLists: TypeAlias = tuple[list[str], list[int], list[str], list[str]]
    # files, folders, identifiers, keyword groups of one repository card
    Associations: TypeAlias = tuple[
        Sequence[str], Sequence[str], Sequence[str], Sequence[Sequence[str]]
    ]
    # id, revision, title, recommendation, repository, then its associations
    CardEntry: TypeAlias = tuple[
        str, int, str, str, str,
        Sequence[str], Sequence[str], Sequence[str], Sequence[Sequence[str]],
    ]  # fmt: skip
    # repository, cards, files, folders, identifiers, keyword groups
    IndexState: TypeAlias = tuple[str | None, CardColumns, Postings, Postings, Postings, Groups]

    class Cards(Protocol):
        """The cards of an index by position: a list, or the columns of a restored one."""

        def __len__(self) -> int: ...

        def __getitem__(self, position: int, /) -> RecallCard: ...

        def __iter__(self) -> Iterator[RecallCard]: ...


__all__ = [
    "SCORE_FILE",
    "SCORE_FOLDER",
    "SCORE_IDENTIFIER",
    "SCORE_KEYWORDS",
    "CardText",
    "Match",
    "RecallIndex",
]

SCORE_FILE = 1000
SCORE_FOLDER = 800
SCORE_IDENTIFIER = 700
SCORE_KEYWORDS = 500
_KINDS = {SCORE_FILE: "file", SCORE_FOLDER: "folder", SCORE_IDENTIFIER: "identifier",
          SCORE_KEYWORDS: "keywords"}  # fmt: skip


class Match:
    """One retrieved card: its strongest association and why (e.g. ``folder src/recall``)."""

    __slots__ = ("lesson", "reason", "score")

    def __init__(self, lesson: RecallCard, score: int, reason: str) -> None:
        self.lesson = lesson
        self.score = score
        self.reason = reason

    def __repr__(self) -> str:
        return f"Match({self.lesson.id!r}@{self.lesson.revision}, {self.score}, {self.reason!r})"


class CardText:
    """The part of a card a recall frames and records, as an index restored from its state
    holds it (the scope lives on in the index tables)."""

    __slots__ = ("id", "recommendation", "revision", "title")

    def __init__(self, id: str, revision: int, title: str, recommendation: str) -> None:
        self.id = id
        self.revision = revision
        self.title = title
        self.recommendation = recommendation


class _CardColumns:
    """A restored index's cards, each built from its columns only when a match names it: a
    hook call matches a handful of a thousand cards."""

    __slots__ = ("columns",)

    def __init__(self, columns: CardColumns) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, position: int, /) -> CardText:
        ids, revisions, titles, recommendations = self.columns
        return CardText(ids[position], revisions[position], titles[position],
                        recommendations[position])  # fmt: skip

    def __iter__(self) -> Iterator[CardText]:
        return (self[position] for position in range(len(self)))


class RecallIndex:
    """Inverted indexes over the repository lessons of one repository, plus its graph lessons.

    ``repository`` restricts repository lessons to that key (a backend should already scope its
    snapshot; this keeps a foreign card from ever matching). Graph lessons are kept by
    ``(graph_hash, node_id)`` with their optional repository qualifier.
    """

    def __init__(self, lessons: Iterable[ScopedCard], *, repository: str | None = None) -> None:
        self.repository = repository
        cards: list[RecallCard] = []
        self._cards: Cards = cards
        self._files: Postings = {}
        self._folders: Postings = {}
        self._identifiers: Postings = {}
        self._groups: Groups = {}
        self._seconds: Seconds = {}
        self._graph: dict[tuple[str, str], list[ScopedCard]] = {}
        self._build(self._lesson_associations(lessons, cards))
        self._ids = _unless_in_order([card.id for card in cards])

    @classmethod
    def from_entries(
        cls,
        entries: Iterable[CardEntry],
        graph_lessons: Iterable[ScopedCard] = (),
        *,
        repository: str | None = None,
    ) -> RecallIndex:
        """An index over repository cards given as plain entries (``id, revision, title,
        recommendation, repository, files, folders, identifiers, keyword_groups``), such as a
        store decodes them straight from its verified rows, plus ``graph_lessons``: it matches
        exactly as one built from the same lessons, and its matches carry :class:`CardText`.
        ``entries`` is read once, as it is produced: the decoding and the indexing are one
        pass."""
        index = cls(graph_lessons, repository=repository)
        if len(index):
            raise ValueError("graph_lessons holds a repository lesson; give it as an entry")
        columns: CardLists = ([], [], [], [])
        index._build(index._entry_associations(entries, columns))
        index._cards = _CardColumns(columns)
        index._ids = _unless_in_order(columns[0])
        return index

    def _build(self, associations: Iterable[Associations]) -> None:
        # The build allocates a few containers per lesson and frees none of them: the cyclic
        # collector would walk the growing tables again and again (a third of the time at
        # 100,000 lessons) to find nothing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._place_groups(*self._index_associations(associations))
            self._seconds = _second_terms(self._groups)
        finally:
            if collecting:
                gc.enable()
        for placed in self._graph.values():
            placed.sort(key=lambda lesson: lesson.id)

    def _lesson_associations(
        self, lessons: Iterable[ScopedCard], cards: list[RecallCard]
    ) -> Iterator[Associations]:
        """The associations of each repository lesson of this index, in order, each lesson
        appended to ``cards`` as it is yielded; graph lessons go to the graph table."""
        repository, graph = self.repository, self._graph
        for lesson in lessons:
            scope = lesson.scope
            if scope.kind == "graph":
                graph.setdefault((scope.graph_hash, scope.node_id), []).append(lesson)
                continue
            if scope.kind != "repository" or (
                repository is not None and scope.repository != repository
            ):
                continue
            cards.append(lesson)
            yield scope.files, scope.folders, scope.identifiers, scope.keyword_groups

    def _entry_associations(
        self, entries: Iterable[CardEntry], columns: CardLists
    ) -> Iterator[Associations]:
        """As :meth:`_lesson_associations`, for plain entries: their text goes to ``columns``."""
        repository = self.repository
        ids, revisions, titles, recommendations = columns
        for lesson_id, revision, title, recommendation, key, *associations in entries:
            if repository is not None and key != repository:
                continue
            ids.append(lesson_id)
            revisions.append(revision)
            titles.append(title)
            recommendations.append(recommendation)
            yield associations  # type: ignore[misc]  # files, folders, identifiers, groups

    def _place_groups(self, groups: list[tuple[int, tuple[str, ...]]], terms: list[str]) -> None:
        """Place each group under its two rarest terms (by ``(frequency, term)``), ``terms``
        being every term of every group, counted here."""
        # A group waits on its two rarest terms: a word of the call wakes only the groups whose
        # second term is also present, found by a set intersection rather than a Python loop.
        # Imported here, and only for groups to place: the hook fallback's call restores its
        # index from a cached state through an empty build and would pay for collections.
        if not groups:
            return
        from collections import Counter

        frequency = Counter(terms)  # counted in C, from one flat list
        placed = self._groups
        for position, group in groups:
            # A pair is its position alone: its terms are the two keys it waits under, so a
            # match reads neither a tuple nor the terms' strings, memory a cold call pays for.
            entry: GroupEntry
            if len(group) == 2:  # most groups: two terms, already in order, no sort needed
                first, second = group
                if frequency[second] < frequency[first]:
                    first, second = second, first
                entry = position
            else:
                ranked = sorted([(frequency[term], term) for term in group])
                first, second = ranked[0][1], ranked[1][1]
                entry = (position, group)
            seconds = placed.get(first)
            if seconds is None:
                seconds = placed[first] = {}
            entries = seconds.get(second)
            if entries is None:
                seconds[second] = entry
            elif isinstance(entries, list):
                entries.append(entry)
            else:
                seconds[second] = [entries, entry]

    def _index_associations(
        self, associations: Iterable[Associations]
    ) -> tuple[list[tuple[int, tuple[str, ...]]], list[str]]:
        """Fill the posting tables, the card at position ``n`` by the ``n``-th associations;
        return the keyword groups, to place once their terms' frequencies are known, and all
        their terms. No call per key: this loop runs once per lesson of the store on every
        run start."""
        files, folders, identifiers = self._files, self._folders, self._identifiers
        broad, intern = BROAD_WORDS, sys.intern
        groups: list[tuple[int, tuple[str, ...]]] = []
        terms_of_groups: list[str] = []
        collect_terms = terms_of_groups.extend
        for position, (scope_files, scope_folders, scope_identifiers, keyword_groups) in enumerate(
            associations
        ):
            # A position enters a posting list once, even if a scope names a key twice. Most
            # keys name one card: their entry is that position, a list only from the second
            # card on (half the allocations, and nothing for the cyclic collector to visit).
            kept_identifiers = [key for key in scope_identifiers if key.lower() not in broad]
            for keys, postings in (
                (scope_files, files),
                (scope_folders, folders),
                (kept_identifiers, identifiers),
            ):
                for key in keys:
                    entries = postings.setdefault(key, position)
                    if entries.__class__ is int:
                        if entries != position:
                            postings[key] = [entries, position]
                    elif entries[-1] != position:  # type: ignore[index]
                        entries.append(position)  # type: ignore[union-attr]
            for group in keyword_groups:
                # Interned: a word shared by many groups is then one string, which a kept index
                # file writes once and loads once (a fifth less to unmarshal at 100,000 lessons).
                terms = tuple(map(intern, sorted(set(group))))
                if len(terms) >= 2 and broad.isdisjoint(terms):
                    groups.append((position, terms))
                    collect_terms(terms)
        return groups, terms_of_groups

    def state(self) -> IndexState:
        """The repository part as plain builtins (tuples, lists, dicts, str, int): what
        :meth:`from_state` takes back, e.g. through ``marshal``. Graph lessons are left out."""
        cards = self._cards
        if isinstance(cards, _CardColumns):  # built from entries or restored: no card to build
            ids, revisions, titles, recommendations = cards.columns
            columns = (tuple(ids), tuple(revisions), tuple(titles), tuple(recommendations))
        else:
            columns = (tuple(card.id for card in cards), tuple(card.revision for card in cards),
                       tuple(card.title for card in cards),
                       tuple(card.recommendation for card in cards))  # fmt: skip
        return (self.repository, columns, self._files, self._folders, self._identifiers,
                self._groups)  # fmt: skip

    @classmethod
    def from_state(cls, state: IndexState, graph_lessons: Iterable[ScopedCard] = ()) -> RecallIndex:
        """An index that matches exactly as the one whose :meth:`state` this is, plus
        ``graph_lessons`` (a state leaves them out)."""
        repository, cards, files, folders, identifiers, groups = state
        index = cls(graph_lessons, repository=repository)
        if len(index):
            raise ValueError("graph_lessons holds a repository lesson; it belongs in the state")
        if len({len(column) for column in cards}) > 1:
            raise ValueError("the card columns of an index state differ in length")
        index._cards = _CardColumns(cards)
        index._ids = _unless_in_order(cards[0])
        index._files, index._folders, index._identifiers = files, folders, identifiers
        index._groups = groups
        collecting = gc.isenabled()
        gc.disable()  # as in _build: a few thousand sets, nothing for the collector to free
        try:
            index._seconds = _second_terms(groups)
        finally:
            if collecting:
                gc.enable()
        return index

    def __len__(self) -> int:
        return len(self._cards)

    @property
    def graph_lesson_count(self) -> int:
        return sum(len(cards) for cards in self._graph.values())

    def match(self, signals: Signals) -> tuple[Match, ...]:
        # position -> (score, key); one score belongs to one kind of association, so equal
        # scores compare keys of the same kind and the smallest key wins (set order never shows).
        # Scores are compared first and keys only on a tie: no tuple built per comparison.
        best: dict[int, tuple[int, str]] = {}
        get = best.get
        # A posting is one position (an int) or a list of them.
        files, folders, identifiers = self._files, self._folders, self._identifiers

        def offer(found: int | list[int], score: int, key: str) -> None:
            for position in (found,) if isinstance(found, int) else found:
                current = get(position)
                if (
                    current is None
                    or current[0] < score
                    or (current[0] == score and key < current[1])
                ):
                    best[position] = (score, key)

        for path in signals.paths:
            found = files.get(path)
            if found is not None:
                offer(found, SCORE_FILE, path)
            if not folders:
                continue
            prefix = ""
            for component in path.split("/"):
                prefix = f"{prefix}/{component}" if prefix else component
                found = folders.get(prefix)
                if found is not None:
                    offer(found, SCORE_FOLDER, prefix)
        for identifier in signals.identifiers:
            found = identifiers.get(identifier)
            if found is not None:
                offer(found, SCORE_IDENTIFIER, identifier)
        words = signals.words
        second_terms = self._seconds
        for word in words:
            placed = second_terms.get(word)
            if placed is None:
                continue
            seconds, waiting = placed
            # Both frozensets: the intersection walks the smaller one's table with the hashes
            # it stores, about twice as fast as walking the dict of groups' keys.
            present = words & seconds
            if not present:
                continue
            for second in present:
                entries = waiting[second]
                for entry in entries if isinstance(entries, list) else (entries,):
                    terms: tuple[str, ...] | None = None
                    if isinstance(entry, int):  # a pair: the word and this second term
                        position = entry
                    else:
                        position, terms = entry
                        if not words.issuperset(terms):
                            continue
                    current = get(position)
                    if current is not None and current[0] > SCORE_KEYWORDS:
                        continue
                    # The key from the call's own strings where it can: no group's strings read.
                    if terms is not None:
                        key = "+".join(terms)
                    else:
                        key = f"{word}+{second}" if word < second else f"{second}+{word}"
                    if current is None or current[0] < SCORE_KEYWORDS or key < current[1]:
                        best[position] = (SCORE_KEYWORDS, key)
        if not best:
            return ()
        # Ranked on plain tuples (score, then id, then position) so the sort compares in C;
        # a card is built only for what is returned, after ranking.
        ids, cards = self._ids, self._cards
        if ids is None:  # positions follow the ids: no id read (a cold line each) to rank
            ranked = sorted([(-score, position, key) for position, (score, key) in best.items()])
        else:
            ranked = [(negative, position, key) for negative, _, position, key in
                      sorted([(-score, ids[position], position, key)
                              for position, (score, key) in best.items()])]  # fmt: skip
        return tuple([Match(cards[position], -negative, f"{_KINDS[-negative]} {key}")
                      for negative, position, key in ranked])  # fmt: skip

    def graph_lessons(
        self, graph_hash: str, node_id: str, repository: str | None = None
    ) -> tuple[ScopedCard, ...]:
        """Graph lessons of one node, unqualified or qualified by ``repository``, by id."""
        cards = self._graph.get((graph_hash, node_id), ())
        return tuple(lesson for lesson in cards if lesson.scope.repository in (None, repository))


def _unless_in_order(ids: Sequence[str]) -> Sequence[str] | None:
    """``ids`` by position, or None when positions already follow them (a store's snapshot is
    ordered by id): ranking by position is then ranking by id. Checked in C, about 4 ms at
    100,000 lessons (an ordered list sorts in one pass), for a list or a tuple only: any other
    column (the hook cache's text column) yields each id through a Python call, and checking
    its 1,000 ids would cost a hook call more (0.35 ms) than ranking its few matches by id."""
    if ids.__class__ is not list and ids.__class__ is not tuple:
        return ids
    return None if sorted(ids) == list(ids) else ids


def _second_terms(groups: Groups) -> Seconds:
    """Each group's rarest term -> the set of the second terms it waits on (see ``match``), and
    its groups by second term: one lookup for a word of the call, not one for each table."""
    return {first: (frozenset(seconds), seconds) for first, seconds in groups.items()}
