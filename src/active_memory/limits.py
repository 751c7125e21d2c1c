"""The card and budget limits, and the words too broad to be keyword terms.

Standard library only: the models, recall (the hook path included), prompts and admission all
read these numbers, so a prompt can never teach a limit that admission does not enforce.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BROAD_WORDS", "LIMITS"]


@dataclass(frozen=True, slots=True)
class _Limits:
    title_bytes: int = 96
    recommendation_bytes: int = 640
    reason_bytes: int = 512
    files: int = 32
    folders: int = 16
    path_bytes: int = 256
    identifiers: int = 32
    identifier_min_chars: int = 3
    identifier_max_chars: int = 128
    keyword_groups: int = 8
    keyword_group_min_terms: int = 2
    keyword_group_max_terms: int = 4
    keyword_min_chars: int = 2
    keyword_max_chars: int = 48
    node_id_bytes: int = 128
    repository_key_bytes: int = 256
    references_min: int = 1
    references_max: int = 8
    reference_bytes: int = 300
    run_id_bytes: int = 128


LIMITS = _Limits()

# Words too broad to retrieve a card on their own, so they may not be keyword terms.
BROAD_WORDS = frozenset(
    {
        "the", "and", "file", "code", "repo", "read", "tool", "files", "write", "tools",
        "repository", "for", "with", "this", "that", "from", "into", "use", "using", "all",
        "any", "not", "src",
    }
)  # fmt: skip
