"""``lessons list --search``: the lessons whose title or recommendation holds every word.

A local or team store answers from its full-text index (``store.listing``, page by page), and
so does the memory service for its token's scope.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from active_memory.models.lessons import Lesson
from active_memory.store.admin_backend import AdminBackend
from active_memory.store.search_text import query_problem

__all__ = ["searched"]

_PER_PAGE = 1000


def searched(
    store: AdminBackend, found: Sequence[Lesson], query: str
) -> tuple[tuple[Lesson, ...], str | None]:
    """The lessons of ``found`` that ``query`` matches, and the index's note when the store
    searched without one. BadParameter (exit 2) for a query of no word or too many."""
    problem = query_problem(query)
    if problem is not None:
        raise click.BadParameter(problem, param_hint="--search")
    ids: set[str] = set()
    note, page, pages = None, 1, 1
    while page <= pages:
        sliced = store.lesson_page(query=query, page=page, per_page=_PER_PAGE)
        ids.update(listed.id for listed in sliced.lessons)
        note, pages, page = sliced.note, sliced.pages, page + 1
    return tuple(x for x in found if x.id in ids), note
