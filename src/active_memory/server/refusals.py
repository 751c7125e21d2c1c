"""How the memory service answers a refusal: the status of each error code, the answer for an
exception of the tree (``store/wire_errors.py``, beside the client's way back), and
``Retry-After`` where waiting helps (a token over its rates, a store that failed or a write
stopped under the lock)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from starlette.responses import Response

from active_memory.errors import ActiveMemoryError, StoreError
from active_memory.server.credentials import Credential
from active_memory.server.fairness import retry_after
from active_memory.store.wire import ErrorAnswer, ErrorCode
from active_memory.store.wire_errors import error_answer

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

    @classmethod
    def answering(cls, answer: ErrorAnswer, *, wait_s: float | None = None) -> Refusal:
        extra = {name: value for name, value in answer if name not in ("error", "message")}
        return cls(answer.error, answer.message, wait_s=wait_s, **extra)


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
    answer = error_answer(error)
    waiting = answer.error == "unavailable" and isinstance(error, StoreError)
    return Refusal.answering(answer, wait_s=_RETRY_UNAVAILABLE_S if waiting else None)


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
