"""How a specialist failure becomes a report entry: a status, a stable code, one line.

Each cause keeps its own code and message: a provider error its ``cause`` (``connection_refused``,
``dns_failed``, ``tls_failed``, ``auth_failed``, ``rate_limited``, ``server_error``,
``malformed_response``, …) and its attempts; a refusal ``model_refused``; an answer that broke
its contract after the repair turn ``contract_violation`` (``malformed_answer`` when it was not
JSON, ``repetitive_output`` when it repeated one span until its output cap, twice).
``timed_out`` is reported only when the deadline (or the specialist's share of it) passed: a
retry that gave up because its next wait would cross the deadline is the failure it was
retrying. A call the server never answered (a hung server) says so, with the host and the time
waited, apart from a model that answered every turn but took them all past the deadline.

Messages never carry answer text: a contract violation is described by its count of errors, not
by the errors themselves (jsonschema quotes the offending values, which may be lesson text).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from active_memory.agents.specialists import Meter
from active_memory.agents.tool_loop import Session
from active_memory.errors import (
    ActiveMemoryError,
    AnswerRefused,
    ContractViolation,
    EvidenceCancelled,
    EvidenceError,
    MalformedAnswer,
    ModelRefused,
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderNoAnswer,
    RepetitiveOutput,
    SessionCancelled,
    StoreError,
)
from active_memory.postmortem.report import SpecialistStatus

__all__ = ["Failure", "classify", "in_repair", "one_line", "unanswered", "unexpected"]

_ERROR_CHARS = 300
_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (AnswerRefused, "answer_refused"),
    (EvidenceError, "evidence_error"),
    (ModelRefused, "model_refused"),
    (StoreError, "store_error"),
    (ActiveMemoryError, "error"),
)


@dataclass(frozen=True, slots=True)
class Failure:
    status: SpecialistStatus
    code: str
    message: str


def one_line(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"


def classify(error: BaseException, *, cancelled: bool) -> Failure:
    """The report entry for ``error``; ``cancelled`` says whether the host cancelled (else a
    stop is the shared deadline's)."""
    stopped: SpecialistStatus = "cancelled" if cancelled else "timed_out"
    if isinstance(error, (asyncio.CancelledError, SessionCancelled, EvidenceCancelled)):
        what = "cancelled by the host" if cancelled else "stopped at the shared deadline"
        return Failure(stopped, stopped, f"{what}; nothing of it was published")
    if isinstance(error, TimeoutError):
        return Failure("timed_out", "timed_out", "the shared postmortem deadline passed")
    if isinstance(error, ProviderNoAnswer):
        message = one_line(f"the provider did not answer in time: {error}")
        return Failure("timed_out", "timed_out", message)
    if isinstance(error, ProviderDeadlineExceeded):
        message = one_line(f"stopped at the deadline: {error}")
        return Failure("timed_out", "timed_out", message)
    if isinstance(error, RepetitiveOutput):
        return Failure("failed", "repetitive_output", one_line(str(error)))
    if isinstance(error, MalformedAnswer):
        message = (
            f"the answer to contract {error.contract!r} was not valid JSON, also after one "
            "repair turn"
        )
        return Failure("failed", "malformed_answer", message)
    if isinstance(error, ContractViolation):
        message = (
            f"the answer did not satisfy contract {error.contract!r} after one repair turn "
            f"({len(error.errors)} error(s))"
        )
        return Failure("failed", "contract_violation", message)
    if isinstance(error, ProviderError):
        return Failure("failed", error.cause, one_line(str(error)))
    for kind, code in _CODES:
        if isinstance(error, kind):
            return Failure("failed", code, one_line(str(error)))
    # A bug must not take the host's run down with it: it is reported like any failure.
    return Failure("failed", "internal_error", one_line(f"{type(error).__name__}: {error}"))


def unanswered(meter: Meter) -> ProviderNoAnswer | None:
    """The provider call the specialist's latest session still waits on, as the error of a
    server that did not answer it; None between calls. A session cancelled at the deadline
    keeps its call's start (``Session.asked_at``) for this."""
    session = meter.sessions[-1] if meter.sessions else None
    if session is None or session.asked_at is None:
        return None
    where = f"session of specialist {session.specialist!r} batch {session.batch}"
    context = f"{where}, turn {session.turns + 1}"
    return ProviderNoAnswer.of(session.provider, session.asked_at, context)


def in_repair(failure: Failure, sessions: Sequence[Session]) -> Failure:
    """A timeout in a repair turn says so, with the count of problems the repair named in the
    answer before it (a broken contract, a loop, a host check; the problems themselves may
    quote lesson text)."""
    session = sessions[-1] if sessions else None
    if failure.status != "timed_out" or session is None or not session.repair_errors:
        return failure
    message = (
        f"{failure.message} (in the repair turn, after an answer with "
        f"{len(session.repair_errors)} problem(s) the repair named)"
    )
    return Failure(failure.status, failure.code, one_line(message))


def unexpected(code: str, what: str, error: BaseException) -> Failure:
    """A failure outside any specialist (the store, the provider factory, the id source): a
    library error keeps its own message, which already says what to do; anything else is named
    by where it happened and its type, since its text was never written for a report."""
    if isinstance(error, ActiveMemoryError):
        return Failure("failed", code, one_line(str(error)))
    return Failure("failed", code, one_line(f"{what}: {type(error).__name__}: {error}"))
