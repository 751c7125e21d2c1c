"""The source stage: does the current checkout back what a lesson cites and associates?

Only tracked or non-ignored files count (ignored build output is no authority). A cited
``repository:<path>`` must be such a file; every file and folder association must exist and be
visible; every identifier must occur, as a whole word, in one of the cited files (read through
the verifier, at most ``MAX_CITED_BYTES`` each). Keyword groups cannot be verified against source,
so a repository lesson also needs at least one file, folder or identifier association.

A cited file must also be one the specialist read in its session (when it had tools over the
checkout): ``cited_file_unread``. A folder association at the repository root or one level
below it (``src``, ``tests``) fires on almost every tool call: ``folder_too_broad``.

A stored card's associations are held to the same checks when a decision carries them on (a keep,
or an adapt that leaves some unchanged): :func:`carried_association_gone` says whether one of them
no longer exists, using the same path checks and whole-word search.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from active_memory.admission.references import Reference
from active_memory.provenance import CheckoutVerifier

__all__ = [
    "MAX_CITED_BYTES",
    "Associations",
    "association_problem",
    "carried_association_gone",
    "citation_problem",
    "cited_paths",
    "folder_too_broad",
    "unread_problem",
]

MAX_CITED_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Associations:
    files: tuple[str, ...]
    folders: tuple[str, ...]
    identifiers: tuple[str, ...]
    keyword_groups: tuple[tuple[str, ...], ...]

    @classmethod
    def from_answer(cls, data: dict[str, Any]) -> Associations:
        """From a contract-shaped ``associations`` object (the shape stage already passed)."""
        return cls(
            files=tuple(data["files"]),
            folders=tuple(data["folders"]),
            identifiers=tuple(data["identifiers"]),
            keyword_groups=tuple(tuple(group) for group in data["keyword_groups"]),
        )

    def strings(self) -> Iterable[str]:
        yield from self.files
        yield from self.folders
        yield from self.identifiers
        for group in self.keyword_groups:
            yield from group


def cited_paths(references: Iterable[Reference]) -> tuple[str, ...]:
    return tuple(r.value for r in references if r.kind == "repository")


# The codes of the three checks a path named in a lesson passes in turn (see _path_problem).
_CITED_FILE = ("cited_file_missing", "cited_path_not_file", "cited_file_ignored")
_ASSOCIATED_FILE = ("association_file_missing", "association_not_file", "association_file_ignored")
_ASSOCIATED_FOLDER = (
    "association_folder_missing",
    "association_not_folder",
    "association_folder_ignored",
)


def _path_problem(
    path: str,
    verifier: CheckoutVerifier,
    is_kind: Callable[[str], bool],
    codes: tuple[str, str, str],
) -> str | None:
    """The code of the first check ``path`` fails, from ``codes``: it exists in the checkout,
    it is of the kind ``is_kind`` asks for (file or folder), git tracks it or does not ignore
    it."""
    missing, wrong_kind, ignored = codes
    if not verifier.exists(path):
        return missing
    if not is_kind(path):
        return wrong_kind
    if not verifier.is_tracked_or_unignored(path):
        return ignored
    return None


def citation_problem(paths: Sequence[str], verifier: CheckoutVerifier) -> str | None:
    for path in paths:
        problem = _path_problem(path, verifier, verifier.is_file, _CITED_FILE)
        if problem is not None:
            return problem
    return None


def unread_problem(paths: Sequence[str], read: frozenset[str]) -> str | None:
    """``cited_file_unread`` when a cited file is not among the files the session read."""
    if any(path not in read for path in paths):
        return "cited_file_unread"
    return None


def folder_too_broad(path: str) -> bool:
    """The repository root, or a top-level folder: either matches almost every tool call."""
    stripped = path.strip("/")
    return stripped in ("", ".") or "/" not in stripped


def _identifier_pattern(identifier: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(identifier) + r"(?![A-Za-z0-9_])")


def association_problem(
    associations: Associations, cited: Sequence[str], verifier: CheckoutVerifier
) -> str | None:
    if not (associations.files or associations.folders or associations.identifiers):
        return "no_verifiable_association"
    for path in associations.files:
        problem = _path_problem(path, verifier, verifier.is_file, _ASSOCIATED_FILE)
        if problem is not None:
            return problem
    for path in associations.folders:
        if folder_too_broad(path) and path.strip("/") in ("", "."):
            return "folder_too_broad"  # the root: whatever the verifier makes of its name
        problem = _path_problem(path, verifier, verifier.is_folder, _ASSOCIATED_FOLDER)
        if problem is not None:
            return problem
        if folder_too_broad(path):
            return "folder_too_broad"
    if _absent_identifier(associations.identifiers, cited, verifier):
        return "identifier_not_in_cited_file"
    return None


def _absent_identifier(
    identifiers: Sequence[str], paths: Sequence[str], verifier: CheckoutVerifier
) -> bool:
    """Whether some identifier occurs as a whole word in none of ``paths`` (read through the
    verifier, so missing, ignored and unreadable files hold nothing)."""
    if not identifiers:
        return False
    texts = [verifier.read_text(path, MAX_CITED_BYTES) for path in paths]
    readable = [text for text in texts if text is not None]
    return any(
        not any(_identifier_pattern(identifier).search(text) for text in readable)
        for identifier in identifiers
    )


def carried_association_gone(
    carried: Associations, searched: Sequence[str], verifier: CheckoutVerifier
) -> bool:
    """Whether an association a decision carries over from a stored card is gone: a file or
    folder that fails the checks of :func:`association_problem` (missing, of the other kind, or
    ignored), or an identifier found as a whole word in none of ``searched`` (the decision's
    citations and the card's own files) when those are where the card points (a card with
    folders, or nothing readable to search, leaves identifiers unjudged). Breadth is not judged
    here: a legacy folder that is too broad still exists, and keeping the card is a judgement,
    not a gone association."""
    for path in carried.files:
        if _path_problem(path, verifier, verifier.is_file, _ASSOCIATED_FILE) is not None:
            return True
    for path in carried.folders:
        if path.strip("/") in ("", "."):
            continue  # the root of the checkout cannot go away
        if _path_problem(path, verifier, verifier.is_folder, _ASSOCIATED_FOLDER) is not None:
            return True
    if carried.folders:
        # The verifier cannot list a folder, so an identifier missing from the searched files
        # may still be in another file of the card's folder: not proof that it is gone.
        return False
    if not any(verifier.read_text(path, MAX_CITED_BYTES) is not None for path in searched):
        return False  # nothing could be read: absence is unknown, not shown
    return _absent_identifier(carried.identifiers, searched, verifier)
