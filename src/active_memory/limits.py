"""The card and budget limits, and the words too broad to be keyword terms.

Standard library only: the models, recall (the hook path included), prompts and admission all
read these numbers, so a prompt can never teach a limit that admission does not enforce.
"""

from __future__ import annotations

__all__ = ["BROAD_WORDS", "LIMITS"]


class _Limits:
    """Read-only numbers. A plain class rather than a dataclass: the hook path imports this
    module on every tool call, and ``dataclasses`` alone costs more than the rest of that call."""

    __slots__ = ()  # no instance attributes: every number stays the class's, read-only

    title_bytes = 96
    recommendation_bytes = 640
    reason_bytes = 512
    files = 32
    folders = 16
    path_bytes = 256
    identifiers = 32
    identifier_min_chars = 3
    identifier_max_chars = 128
    keyword_groups = 8
    keyword_group_min_terms = 2
    keyword_group_max_terms = 4
    keyword_min_chars = 2
    keyword_max_chars = 48
    node_id_bytes = 128
    repository_key_bytes = 256
    references_min = 1
    references_max = 8
    reference_bytes = 300
    run_id_bytes = 128
    # A revision a line, a card or a mutation may name: the largest integer every JSON reader
    # keeps exact (2**53 - 1), far below what the backends store (SQLite's and PostgreSQL's
    # int64, ``stored_integer_max``). Every write checks it too: a lesson at it cannot change.
    revision_max = 2**53 - 1
    stored_integer_max = 2**63 - 1


LIMITS = _Limits()

# Words too broad to retrieve a card on their own, so they may not be keyword terms.
BROAD_WORDS = frozenset(
    {
        "the", "and", "file", "code", "repo", "read", "tool", "files", "write", "tools",
        "repository", "for", "with", "this", "that", "from", "into", "use", "using", "all",
        "any", "not", "src",
    }
)  # fmt: skip
