"""The memory service's errors on the wire, both ways, side by side: :func:`error_answer` is how
the service answers an exception of the tree, :func:`raised_for` the exception
:class:`~active_memory.store.remote.RemoteBackend` raises again for that answer (the table is
in ``store/wire.py``). A code added to one direction is added to the other here.
"""

from __future__ import annotations

from active_memory.errors import (
    ActiveMemoryError,
    LessonNotFound,
    LessonRetired,
    LessonValidationError,
    PublicationError,
    PublicationFenced,
    QuarantineNotFound,
    RevisionConflict,
    RevisionMismatch,
    ScopeRefused,
    ScreenRefused,
    StoreError,
    StoreUnavailable,
)
from active_memory.store.admin_wire import HELD_SUBJECT
from active_memory.store.wire import ErrorAnswer, MismatchWire, ScreenedWire

__all__ = ["error_answer", "raised_for"]


def error_answer(error: ActiveMemoryError) -> ErrorAnswer:
    """The answer the service sends for ``error`` (``unavailable`` for what has no code)."""
    message = str(error)
    if isinstance(error, ScopeRefused):
        return ErrorAnswer(
            error="out_of_scope", message=message, subject=error.what, scope=error.scope
        )
    if isinstance(error, RevisionConflict):
        mismatches = tuple(
            MismatchWire(id=m.id, expected=m.expected, found=m.found, tombstoned=m.tombstoned)
            for m in error.mismatches
        )
        return ErrorAnswer(error="conflict", message=message, mismatches=mismatches)
    if isinstance(error, LessonRetired):
        return ErrorAnswer(error="not_found", message=message, retired_at=error.revision)
    if isinstance(error, LessonNotFound):
        return ErrorAnswer(error="not_found", message=message)
    if isinstance(error, QuarantineNotFound):
        return ErrorAnswer(error="not_found", message=message, subject=HELD_SUBJECT)
    if isinstance(error, PublicationFenced):
        return ErrorAnswer(error="fenced", message=message)
    if isinstance(error, LessonValidationError):
        return ErrorAnswer(error="bad_request", message=message)
    if isinstance(error, ScreenRefused):
        screened = tuple(ScreenedWire(id=i, codes=codes) for i, codes in error.drafts)
        return ErrorAnswer(error="screened", message=message, screened=screened)
    if isinstance(error, PublicationError):
        return ErrorAnswer(error="refused", message=message)
    return ErrorAnswer(error="unavailable", message=message)


def raised_for(
    error: ErrorAnswer, url: str, failure: type[StoreError], lesson_id: str | None
) -> StoreError:
    """The exception for ``error``, answered by the service at ``url`` to a request about
    ``lesson_id`` (when it named one); ``failure`` for a code that has no exception of its own."""
    message = error.message
    if error.error == "unauthorized":
        return StoreUnavailable(url, message)
    if error.error == "out_of_scope":
        return ScopeRefused(error.subject or "the request", error.scope or "unknown scope")
    if error.error == "conflict":
        return RevisionConflict(
            [RevisionMismatch(m.id, m.expected, m.found, m.tombstoned) for m in error.mismatches]
        )
    if error.error == "not_found" and error.subject == HELD_SUBJECT:
        return QuarantineNotFound(lesson_id or "?")
    if error.error == "not_found" and lesson_id is not None:
        if error.retired_at is not None:
            return LessonRetired(lesson_id, error.retired_at)
        return LessonNotFound(
            lesson_id,
            f"the memory service at {url!r} has no lesson by that id in this token's "
            "tenant; check the id against a snapshot (a lesson id is not shared between "
            "tenants)",
        )
    if error.error == "fenced":
        return PublicationFenced(message)
    if error.error == "screened" and error.screened:
        return ScreenRefused([(entry.id, entry.codes) for entry in error.screened])
    if error.error in ("refused", "too_large"):
        return PublicationError(message)
    return failure(f"the memory service at {url!r} refused: {message}")
