"""How the memory service answers a refusal: the status of each error code, the exception of
the tree each code stands for, and ``Retry-After`` where waiting helps (a token over its rates,
a store that failed or a write stopped under the lock)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from starlette.responses import Response

from active_memory.errors import (
    ActiveMemoryError,
    LessonNotFound,
    LessonRetired,
    LessonValidationError,
    PublicationError,
    PublicationFenced,
    QuarantineNotFound,
    RevisionConflict,
    ScopeRefused,
    ScreenRefused,
    StoreError,
)
from active_memory.server.credentials import Credential
from active_memory.server.fairness import retry_after
from active_memory.store.admin_wire import HELD_SUBJECT
from active_memory.store.wire import ErrorAnswer, ErrorCode, MismatchWire, ScreenedWire

__all__ = [
    "MISSING_CREDENTIAL",
    "REFUSED_CREDENTIAL",
    "STATUS",
    "Refusal",
    "answer",
    "refusal_for",
    "refuse_other_run",
    "refuse_without_review",
]

STATUS: dict[ErrorCode, int] = {
    "bad_request": 400,
    "unauthorized": 401,
    "out_of_scope": 403,
    "not_found": 404,
    "timeout": 408,
    "rate_limited": 429,
    "conflict": 409,
    "fenced": 412,
    "too_large": 413,
    "refused": 422,
    "screened": 422,
    "unavailable": 503,
}
MISSING_CREDENTIAL = (
    "this service needs a credential: send 'Authorization: Bearer <token>' "
    "(`active-memory server token create` issues one)"
)
REFUSED_CREDENTIAL = (
    "the credential was refused (unknown, wrong, revoked or expired); ask for a new token"
)


# A store that failed or a write stopped under the lock: worth a retry in a moment.
_RETRY_UNAVAILABLE_S = 1.0


class Refusal(Exception):
    def __init__(
        self, code: ErrorCode, message: str, *, wait_s: float | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.answer = ErrorAnswer(error=code, message=message, **extra)
        self.wait_s = wait_s


def answer(
    model: BaseModel, status: int = 200, *, close: bool = False, wait_s: float | None = None
) -> Response:
    headers = {"connection": "close"} if close else {}
    if status == 401:
        headers["www-authenticate"] = 'Bearer realm="active-memory"'
    if wait_s is not None:
        headers["retry-after"] = retry_after(wait_s)
    return Response(model.model_dump_json(), status, headers, media_type="application/json")


def refusal_for(error: ActiveMemoryError) -> Refusal:
    message = str(error)
    if isinstance(error, ScopeRefused):
        return Refusal("out_of_scope", message, subject=error.what, scope=error.scope)
    if isinstance(error, RevisionConflict):
        mismatches = tuple(
            MismatchWire(id=m.id, expected=m.expected, found=m.found, tombstoned=m.tombstoned)
            for m in error.mismatches
        )
        return Refusal("conflict", message, mismatches=mismatches)
    if isinstance(error, LessonRetired):
        return Refusal("not_found", message, retired_at=error.revision)
    if isinstance(error, LessonNotFound):
        return Refusal("not_found", message)
    if isinstance(error, QuarantineNotFound):
        return Refusal("not_found", message, subject=HELD_SUBJECT)
    if isinstance(error, PublicationFenced):
        return Refusal("fenced", message)
    if isinstance(error, LessonValidationError):
        return Refusal("bad_request", message)
    if isinstance(error, ScreenRefused):
        screened = tuple(ScreenedWire(id=i, codes=codes) for i, codes in error.drafts)
        return Refusal("screened", message, screened=screened)
    if isinstance(error, PublicationError):
        return Refusal("refused", message)
    wait_s = _RETRY_UNAVAILABLE_S if isinstance(error, StoreError) else None
    return Refusal("unavailable", message, wait_s=wait_s)


def refuse_other_run(who: Credential, run_id: str) -> None:
    if who.refuses_run(run_id):
        raise Refusal(
            "out_of_scope",
            f"this token is bound to run {who.run_id!r} and may not write under run id "
            f"{run_id!r}; write under its own run id, or issue a token for that run",
            subject=f"run id {run_id!r}",
            scope=f"run {who.run_id!r}",
        )


def refuse_without_review(who: Credential, action: str) -> None:
    """403 ``out_of_scope`` unless ``who`` may review: ``action`` (approving or rejecting a held
    proposal) publishes or discards what the screen held, which is a person's decision."""
    if not who.review:
        raise Refusal(
            "out_of_scope",
            f"this token lacks the review permission, which {action} needs; approve or reject "
            "with a token created by `active-memory server token create --review`",
            subject=action,
            scope=f"{who.scope.describe()}, without the review permission: "
            "`active-memory server token create --review` issues a token that has it",
        )
