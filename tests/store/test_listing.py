"""The browser's pages are filtered, searched, sorted, counted and sliced in SQL, on either
engine, and list what filtering every lesson in Python lists; the search text follows every
publication path."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from engines import Engine, Store

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import GraphScope, Lesson
from active_memory.store import search_text
from active_memory.store.listing import ListedLesson
from active_memory.store.search_text import (
    LIKE_NOTE,
    STALE_NOTE,
    create_fts_index,
    query_words,
    text_matches,
)
from active_memory.store.sqlite import SqliteStore
from factories import make_draft, make_graph_draft, publish_new

OTHER = "forge:github.com/acme/other"
GRAPH = "b" * 64


def fill(store: Store) -> None:
    drafts = [make_draft(f"Retry the Ünïcode export step {n}") for n in range(7)]
    drafts += [
        make_draft(
            f"Pin the cache region {n}",
            repository=OTHER,
            recommendation="Pin it; the default region drifts.",
        )
        for n in range(3)
    ]
    drafts += [make_graph_draft(f"Return the verdict {n}", graph_hash=GRAPH) for n in range(4)]
    drafts += [make_graph_draft("Return the verdict, qualified", repository=OTHER)]
    publish_new(store, *drafts)  # fmt: skip


def expected(
    live: tuple[Lesson, ...], repository: str | None, graph: str | None, query: str | None
) -> list[str]:
    """What the browser lists, filtering every lesson in Python."""
    words = query_words(query)
    return [
        lesson.id
        for lesson in live
        if (not repository or lesson.scope.repository == repository)
        and (not graph or (isinstance(lesson.scope, GraphScope)
                           and lesson.scope.graph_hash == graph))
        and (not words or text_matches(words, lesson.title, lesson.recommendation))
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("repository", "graph", "query"),
    [(None, None, None), (OTHER, None, None), (None, GRAPH, None), (None, None, "unicode"),
     (OTHER, None, "verdict"), (None, None, "  CACHE "), (None, None, "nothing like it"),
     (None, None, "verd obj"), (None, None, "drifts"), (None, None, "-- ;'\"*")],
)  # fmt: skip
def test_a_page_lists_what_filtering_every_lesson_lists(
    store: Store, repository: str | None, graph: str | None, query: str | None
) -> None:
    fill(store)
    live = store.list_lessons()
    wanted = expected(live, repository, graph, query)
    listed: list[str] = []
    for page in (1, 2, 3, 4, 5):
        sliced = store.lesson_page(repository=repository, graph=graph, query=query, page=page,
                                   per_page=3)  # fmt: skip
        assert sliced.matching == len(wanted)
        assert sliced.pages == max(1, -(-len(wanted) // 3))
        assert sliced.note is None
        if page <= sliced.pages:
            assert sliced.page == page
            listed += [lesson.id for lesson in sliced.lessons]
        else:  # clamped to the last page
            assert sliced.page == sliced.pages
    assert listed == wanted
    every = {ListedLesson.of(lesson) for lesson in live}
    assert set(store.lesson_page(per_page=50).lessons) == every


def test_the_search_matches_words_of_titles_and_recommendations(store: Store) -> None:
    fill(store)
    cases = {"verdict": 5, "verd": 5, "json verdict": 5, "export": 7, "region drifts": 3,
             "cache": 3, "rejects stale": 7, "stale verdict": 0}  # fmt: skip
    for query, count in cases.items():
        assert store.lesson_page(query=query).matching == count, query


# A word inside a path, a dotted name or a number is a word; case, ß, ligatures and accents
# folded alike on both engines, whatever the database's locale.
_PATHS = (
    "Fix tests/conftest.py before src/app/config.py",
    "Read load_settings and APP_REQUEST_TIMEOUT; see example.com, 3.14 and v1.2.3.",
)
_LETTERS = (
    "Set the Straße field first",
    "Call the ﬁle loader; the ΟΔΟΣ key is Ωmega; 日本語のテスト; the café's menu.",
)
_FOLDED = {"app": _PATHS, "py": _PATHS, "conftest": _PATHS, "14": _PATHS, "example com": _PATHS,
           "1.2.3": _PATHS, "V1": _PATHS, "timeout settings": _PATHS, "Straße": _LETTERS,
           "strasse": _LETTERS, "STRASSE": _LETTERS, "ﬁle": _LETTERS, "FILE": _LETTERS,
           "οδος": _LETTERS, "ΟΔΟΣ": _LETTERS, "ωMEGA": _LETTERS, "日本語": _LETTERS,
           "cafe": _LETTERS, "CAFÉ": _LETTERS, "onftest": None, "trasse": None}  # fmt: skip


def _search_folding(store: Store) -> None:
    drafts = [make_draft(title, recommendation=text) for title, text in (_PATHS, _LETTERS)]
    ids = dict(zip((_PATHS, _LETTERS), publish_new(store, *drafts), strict=True))
    for query, card in _FOLDED.items():
        found = [x.id for x in store.lesson_page(query=query).lessons]
        assert found == ([ids[card]] if card else []), query
        assert text_matches(query_words(query), *card) if card else True, query  # HTTPS path


def test_words_of_paths_names_and_numbers_and_folded_letters_are_found(store: Store) -> None:
    _search_folding(store)


@pytest.mark.sqlite_only
def test_without_fts5_like_finds_the_same_words(store: Store, without_fts5: None) -> None:
    _search_folding(store)
    assert store.lesson_page(query="app").note == LIKE_NOTE


def test_sorts_order_the_whole_selection_before_the_page(store: Store) -> None:
    fill(store)
    live = store.list_lessons()
    [first] = publish_new(store, make_draft("Revised twice", files=("a.py",)))
    store.publish(Publication(run_id="run-edit", mutations=(
        Mutation(op="upsert", id=first, expected_revision=1,
                 draft=make_draft("Revised twice, now", files=("a.py",))),
    )))  # fmt: skip
    ids = sorted([lesson.id for lesson in live] + [first])
    pages = {sort: [x.id for p in (1, 2, 3, 4) for x in
                    store.lesson_page(sort=sort, page=p, per_page=4).lessons]
             for sort in ("oldest", "newest", "revised")}  # fmt: skip
    assert pages["oldest"] == ids
    assert pages["newest"] == ids[::-1]
    assert pages["revised"][0] == first
    assert pages["revised"][1:] == [i for i in ids[::-1] if i != first]
    verdicts = sorted(x.id for x in live if "verdict" in x.title.casefold())
    for sort, wanted in (
        ("oldest", verdicts),
        ("newest", verdicts[::-1]),
        ("revised", verdicts[::-1]),
    ):
        searched = [
            x.id
            for p in (1, 2, 3)
            for x in store.lesson_page(query="verdict", sort=sort, page=p, per_page=2).lessons
        ]
        assert searched == wanted, sort  # fmt: skip


def test_the_search_text_follows_retire_revert_and_import(store: Store) -> None:
    [kept, gone] = publish_new(store, make_draft("Keep the lockfile"),
                               make_draft("Vendor the lockfile"))  # fmt: skip
    assert store.lesson_page(query="lockfile").matching == 2
    store.publish(Publication(run_id="run-retire", mutations=(
        Mutation(op="retire", id=gone, expected_revision=1),)))  # fmt: skip
    assert [x.id for x in store.lesson_page(query="lockfile").lessons] == [kept]
    assert store.lesson_page(query="vendor").matching == 0
    store.publish(Publication(run_id="run-edit", mutations=(
        Mutation(op="upsert", id=kept, expected_revision=1,
                 draft=make_draft("Commit the lockfile")),)))  # fmt: skip
    assert store.lesson_page(query="keep").matching == 0
    assert [x.id for x in store.lesson_page(query="commit").lessons] == [kept]
    store.revert(kept, 1)
    assert [x.id for x in store.lesson_page(query="keep").lessons] == [kept]
    assert store.lesson_page(query="commit").matching == 0
    lines = list(store.export())
    store.import_lines(lines, replace=True)
    assert [x.id for x in store.lesson_page(query="lockfile").lessons] == [kept]


def test_ascii_text_folds_as_the_unicode_path_folds_it_and_other_text_takes_that_path() -> None:
    """ASCII text is folded with ``lower()`` (the writer's fast path): the words must be the
    ones casefold, NFKD and dropping the marks give, and text with any other letter (ß, a
    ligature, an accented capital, a dotted capital I, a Kelvin sign) must still take that
    path."""

    def reference(text: str) -> list[str]:
        plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold())
                        if not unicodedata.combining(c))  # fmt: skip
        return [word[: search_text.WORD_CHARS] for word in re.findall(r"[^\W_]+", plain)]

    ascii_text = "".join(map(chr, range(128))) + " Mixed_Case WORDS 42 v1.2.3 " + "Q" * 300
    assert search_text.folded_words(ascii_text) == reference(ascii_text)
    for text in ("Stra\u00dfe", "\ufb01le", "CAF\u00c9 caf\u00e9", "\u0130stanbul", "\u212aelvin",
                 "\u01c5ungla", "\u2163 x\u00b2"):  # fmt: skip
        assert search_text.folded_words(text) == reference(text), text
    assert search_text.folded_words("Stra\u00dfe \ufb01le") == ["strasse", "file"]


def test_one_batch_that_edits_and_retires_leaves_only_the_live_words(
    engine: Engine, store: Store
) -> None:
    """On PostgreSQL a live lesson's words are replaced in place and only the lessons left
    without a card lose theirs: in one batch, an edit, a retirement and a new lesson."""
    [edited, retired] = publish_new(store, make_draft("Quokka lockfile"),
                                    make_draft("Zanzibar lockfile"))  # fmt: skip
    created = new_lesson_id()
    store.publish(Publication(run_id="run-mixed", mutations=(
        Mutation(op="upsert", id=edited, expected_revision=1, draft=make_draft("Wombat vendor")),
        Mutation(op="retire", id=retired, expected_revision=1),
        Mutation(op="upsert", id=created, expected_revision=0, draft=make_draft("Numbat pin")),
    )))  # fmt: skip
    for query, found in (("quokka", []), ("zanzibar", []), ("lockfile", []),
                         ("wombat", [edited]), ("numbat", [created])):  # fmt: skip
        assert [x.id for x in store.lesson_page(query=query).lessons] == found, query
    table = "lesson_text_rows" if engine.name == "sqlite" else "lesson_text"
    rows = engine.raw(store, f"SELECT id FROM {table} ORDER BY id")
    assert rows == [(lesson_id,) for lesson_id in sorted((edited, created))]


def test_the_counts_cover_every_live_lesson_whatever_the_filters(store: Store) -> None:
    fill(store)
    live = store.list_lessons()
    sliced = store.lesson_page(repository=OTHER, query="cache", per_page=2)
    repositories = Counter(x.scope.repository for x in live if x.scope.repository)
    graphs = Counter(x.scope.graph_hash for x in live if isinstance(x.scope, GraphScope))
    assert sliced.repositories == dict(repositories)
    assert sliced.graphs == dict(graphs)


def test_the_counts_follow_every_write_as_a_recount_finds_them(store: Store) -> None:
    fill(store)
    live = store.list_lessons()
    moved, gone, graph_gone = live[0].id, live[1].id, live[-1].id
    store.publish(Publication(run_id="run-change", mutations=(
        Mutation(op="upsert", id=moved, expected_revision=1,
                 draft=make_draft("Moved", repository="forge:github.com/acme/moved")),
        Mutation(op="retire", id=gone, expected_revision=1),
        Mutation(op="retire", id=graph_gone, expected_revision=1),
    )))  # fmt: skip
    store.revert(moved, 1)
    store.import_lines(list(store.export()), replace=True)
    now = store.list_lessons()
    sliced = store.lesson_page()
    assert sliced.repositories == dict(Counter(x.scope.repository for x in now
                                               if x.scope.repository))  # fmt: skip
    assert sliced.graphs == dict(Counter(x.scope.graph_hash for x in now
                                         if isinstance(x.scope, GraphScope)))  # fmt: skip
    assert "forge:github.com/acme/moved" not in sliced.repositories  # reverted away, count 0


def test_an_empty_store_has_one_empty_page(store: Store) -> None:
    sliced = store.lesson_page(page=3)
    assert (sliced.lessons, sliced.page, sliced.pages, sliced.matching) == ((), 1, 1, 0)
    assert store.retired_page(page=2).matching == 0


def test_retired_ids_page_newest_first_with_their_last_titles(store: Store) -> None:
    ids = publish_new(store, *(make_draft(f"Retired lesson {n}") for n in range(5)))
    store.publish(Publication(run_id="run-retire", mutations=tuple(
        Mutation(op="retire", id=i, expected_revision=1) for i in ids)))  # fmt: skip
    store.purge(ids[0])
    listed = [row for page in (1, 2, 3) for row in store.retired_page(page=page,
                                                                      per_page=2).rows]  # fmt: skip
    assert [row.id for row in listed] == ids[::-1]
    titles = {row.id: row.title for row in listed}
    assert titles[ids[0]] is None  # purged: its content is erased
    assert titles[ids[4]] == "Retired lesson 4"
    assert store.retired_page(per_page=2).pages == 3


@pytest.mark.sqlite_only
def test_a_purge_leaves_no_word_of_the_lesson_in_the_search_index(store: Store) -> None:
    [gone] = publish_new(store, make_draft("Zanzibar quokka handling"))
    publish_new(store, make_draft("Other lesson"))
    store.publish(Publication(run_id="run-retire", mutations=(
        Mutation(op="retire", id=gone, expected_revision=1),)))  # fmt: skip
    store.purge(gone)
    path = store.path  # type: ignore[union-attr]
    raw = sqlite3.connect(path)
    try:
        blocks = raw.execute("SELECT block FROM lesson_text_data").fetchall()
        rows = raw.execute("SELECT count(*) FROM lesson_text_rows").fetchone()
    finally:
        raw.close()
    data = b"".join(bytes(block) for (block,) in blocks)
    assert b"quokka" not in data
    assert b"zanzibar" not in data
    assert rows == (1,)
    assert b"quokka" not in path.read_bytes()


@pytest.fixture
def without_fts5(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's SQLite as one built without the FTS5 module."""
    monkeypatch.setattr(search_text, "fts5_available", lambda conn: False)


@pytest.mark.sqlite_only
def test_without_fts5_the_search_compares_words_with_like_and_says_so(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    [first] = publish_new(store, make_draft("Pin the toolchain version"))
    path = store.path  # type: ignore[union-attr]
    monkeypatch.setattr(search_text, "fts5_available", lambda conn: False)
    raw = sqlite3.connect(path, isolation_level=None)
    try:  # the store as the migration leaves it where this SQLite lacks FTS5
        raw.execute("DROP TABLE lesson_text")
        raw.execute("DELETE FROM lesson_text_rows")
        create_fts_index(raw)
        assert not search_text.has_table(raw, "lesson_text")
        assert raw.execute("SELECT id, title FROM lesson_text_rows").fetchall() == [
            (first, "pin the toolchain version")
        ]
    finally:
        raw.close()
    [second] = publish_new(store, make_draft("Pin the base image", recommendation="Use a digest."))
    sliced = store.lesson_page(query="PIN")
    assert [x.id for x in sliced.lessons] == [first, second]
    assert sliced.note == LIKE_NOTE
    assert [x.id for x in store.lesson_page(query="digest").lessons] == [second]
    assert store.lesson_page(query="toolchain image").matching == 0
    assert store.lesson_page(query="ase").matching == 0  # inside "base": not a word's start
    assert store.lesson_page().note is None  # no search, nothing to say


@pytest.mark.sqlite_only
def test_a_store_indexed_with_fts5_stays_writable_without_it_and_is_reindexed_after(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SqliteStore(store_path) as store:
        [kept, gone] = publish_new(store, make_draft("Keep the lockfile"),
                                   make_draft("Vendor the lockfile"))  # fmt: skip
    with monkeypatch.context() as patched:
        patched.setattr(search_text, "fts5_available", lambda conn: False)
        with SqliteStore(store_path) as store:  # an SQLite without FTS5 writes the store
            store.publish(Publication(run_id="run-retire", mutations=(
                Mutation(op="retire", id=gone, expected_revision=1),)))  # fmt: skip
            [added] = publish_new(store, make_draft("Hash the lockfile"))
            sliced = store.lesson_page(query="lockfile")
            assert ([x.id for x in sliced.lessons], sliced.note) == ([kept, added], LIKE_NOTE)
    with SqliteStore(store_path, read_only=True) as reader:  # FTS5 again: stale, not used
        sliced = reader.lesson_page(query="lockfile")
        assert ([x.id for x in sliced.lessons], sliced.note) == ([kept, added], STALE_NOTE)
    with SqliteStore(store_path) as store:  # opened for writing (as by `store check`): rebuilt
        sliced = store.lesson_page(query="lockfile")
        assert ([x.id for x in sliced.lessons], sliced.note) == ([kept, added], None)
        assert [x.id for x in store.lesson_page(query="vendor").lessons] == []
        assert [x.id for x in store.lesson_page(query="hash").lessons] == [added]
        assert store.check().problems == ()
    raw = sqlite3.connect(store_path)
    try:  # the index agrees with its text table, row for row
        raw.execute("INSERT INTO lesson_text (lesson_text, rank) VALUES ('integrity-check', 1)")
        assert raw.execute("SELECT count(*) FROM lesson_text_stale").fetchone() == (0,)
    finally:
        raw.close()


@pytest.mark.sqlite_only
def test_the_next_write_with_fts5_rebuilds_a_stale_index(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    [first] = publish_new(store, make_draft("Keep the lockfile"))
    with monkeypatch.context() as patched:
        patched.setattr(search_text, "fts5_available", lambda conn: False)
        store.publish(Publication(run_id="run-edit", mutations=(
            Mutation(op="upsert", id=first, expected_revision=1,
                     draft=make_draft("Commit the lockfile")),)))  # fmt: skip
    assert store.lesson_page(query="commit").note == STALE_NOTE
    [second] = publish_new(store, make_draft("Vendor the lockfile"))
    sliced = store.lesson_page(query="lockfile")
    assert ([x.id for x in sliced.lessons], sliced.note) == ([first, second], None)
    assert store.lesson_page(query="keep").matching == 0
