"""What recall reads of a lesson card, and the key its exposures are recorded under.

Recall is typed against these structural protocols rather than the lesson models: a stored
``Lesson`` satisfies them by plain attribute access, and so do the rows the hook fallback decodes
straight from the store (:mod:`active_memory.store.rows`), so the hook path never imports the
models, nor pydantic behind them.

* :class:`RecallCard`: what is framed, reported and recorded (``id``, ``revision``, ``title``,
  ``recommendation``);
* :class:`ScopedCard`: a card with the scope the index places it by. ``scope.kind`` tells the
  two scopes apart (never ``isinstance`` on a model class): a repository scope carries the
  associations that retrieve it, a graph scope the node it guides.

The protocols exist for the type checker only. ``typing`` is not imported at run time (its
import costs a hook call more than its matching does), so import them under ``TYPE_CHECKING``.
"""

from __future__ import annotations

from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Literal, Protocol

    class RecallCard(Protocol):
        @property
        def id(self) -> str: ...

        @property
        def revision(self) -> int: ...

        @property
        def title(self) -> str: ...

        @property
        def recommendation(self) -> str: ...

    class RepositoryAssociations(Protocol):
        @property
        def kind(self) -> Literal["repository"]: ...

        @property
        def repository(self) -> str: ...

        @property
        def files(self) -> Sequence[str]: ...

        @property
        def folders(self) -> Sequence[str]: ...

        @property
        def identifiers(self) -> Sequence[str]: ...

        @property
        def keyword_groups(self) -> Sequence[Sequence[str]]: ...

    class GraphPlacement(Protocol):
        @property
        def kind(self) -> Literal["graph"]: ...

        @property
        def graph_hash(self) -> str: ...

        @property
        def node_id(self) -> str: ...

        @property
        def repository(self) -> str | None: ...

    class ScopedCard(RecallCard, Protocol):
        @property
        def scope(self) -> RepositoryAssociations | GraphPlacement: ...


__all__ = ["card_key"]


def card_key(card: RecallCard) -> str:
    """``id@revision``: what the exposure ledger and the delivery manifest record."""
    return f"{card.id}@{card.revision}"
