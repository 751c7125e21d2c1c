"""The browser's page of lessons is filtered, counted and sliced in SQL, on either engine, and
lists what filtering every lesson in Python lists."""

from __future__ import annotations

from collections import Counter

import pytest
from engines import Store

from active_memory.models.lessons import GraphScope, Lesson
from factories import make_draft, make_graph_draft, publish_new

OTHER = "forge:github.com/acme/other"
GRAPH = "b" * 64


def fill(store: Store) -> None:
    drafts = [make_draft(f"Retry the Ünïcode export step {n}") for n in range(7)]
    drafts += [make_draft(f"Pin the cache region {n}", repository=OTHER) for n in range(3)]
    drafts += [make_graph_draft(f"Return the verdict {n}", graph_hash=GRAPH) for n in range(4)]
    drafts += [make_graph_draft("Return the verdict, qualified", repository=OTHER)]
    publish_new(store, *drafts)


def expected(
    live: tuple[Lesson, ...], repository: str | None, graph: str | None, query: str | None
) -> list[str]:
    """What the browser listed before the page was cut in SQL."""
    needle = (query or "").casefold().strip()
    return [
        lesson.id
        for lesson in live
        if (not repository or lesson.scope.repository == repository)
        and (not graph or (isinstance(lesson.scope, GraphScope)
                           and lesson.scope.graph_hash == graph))
        and (not needle or needle in lesson.title.casefold())
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("repository", "graph", "query"),
    [(None, None, None), (OTHER, None, None), (None, GRAPH, None), (None, None, "ÜNÏCODE"),
     (OTHER, None, "verdict"), (None, None, "  cache "), (None, None, "nothing like it")],
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
        if page <= sliced.pages:
            assert sliced.page == page
            listed += [lesson.id for lesson in sliced.lessons]
        else:  # clamped to the last page
            assert sliced.page == sliced.pages
    assert listed == wanted
    assert all(lesson in live for lesson in store.lesson_page(per_page=50).lessons)


def test_the_counts_cover_every_live_lesson_whatever_the_filters(store: Store) -> None:
    fill(store)
    live = store.list_lessons()
    sliced = store.lesson_page(repository=OTHER, query="cache", per_page=2)
    repositories = Counter(x.scope.repository for x in live if x.scope.repository)
    graphs = Counter(x.scope.graph_hash for x in live if isinstance(x.scope, GraphScope))
    assert sliced.repositories == dict(repositories)
    assert sliced.graphs == dict(graphs)


def test_an_empty_store_has_one_empty_page(store: Store) -> None:
    sliced = store.lesson_page(page=3)
    assert (sliced.lessons, sliced.page, sliced.pages, sliced.matching) == ((), 1, 1, 0)
