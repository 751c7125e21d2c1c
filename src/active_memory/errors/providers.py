"""A model provider's errors: failures after retries, deadlines, unanswered calls, replay
mismatches (see :mod:`active_memory.errors` for the tree)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from active_memory.errors.core import ActiveMemoryError

__all__ = [
    "HarnessUnavailable",
    "ProviderDeadlineExceeded",
    "ProviderError",
    "ProviderNoAnswer",
    "ProviderTransientError",
    "ProviderUnavailable",
    "ReplayChanged",
    "ReplayMismatch",
]


class ProviderError(ActiveMemoryError):
    """A model provider failed; SDK exceptions are translated into this in one place each.

    ``cause`` is a stable code for what failed (``connection_refused``, ``dns_failed``,
    ``tls_failed``, ``auth_failed``, ``rate_limited``, ``server_error``, ``timed_out``, …), the
    one a report and the run log carry; ``attempts`` counts the calls made, so ``retries`` is
    what the retry layer spent before giving up.
    """

    # A plain attribute, not a ClassVar: the hook path imports this module and not typing.
    default_cause = "provider_error"

    def __init__(self, message: str, *, cause: str | None = None, attempts: int = 1) -> None:
        self.cause = cause or self.default_cause
        self.attempts = attempts
        super().__init__(message)

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)


class ProviderUnavailable(ProviderError):
    """The SDK extra or a credential is missing (``provider_unavailable``), or the server
    refused the credential (``auth_failed``)."""

    default_cause = "provider_unavailable"


class HarnessUnavailable(ProviderUnavailable):
    """A harness lane's CLI cannot run a specialist session: it is not on PATH
    (``harness_missing``), too old (``harness_too_old``) or logged out (``harness_logged_out``).
    The message is one sentence naming the command that fixes it."""

    default_cause = "harness_missing"


class ProviderDeadlineExceeded(ProviderError):
    """The shared postmortem deadline passed during a provider call (raised only once it has)."""

    default_cause = "timed_out"


class ProviderNoAnswer(ProviderDeadlineExceeded):
    """The deadline passed while a call waited for its answer: the server at ``host`` sent
    nothing in ``waited`` seconds (a hung server, or one still generating), unlike a model that
    answered every turn but took them all together past the deadline."""

    def __init__(
        self,
        provider: str,
        host: str | None,
        waited: float,
        *,
        context: str = "",
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.host = host
        self.waited = waited
        where = f"{provider} at {host}" if host else provider
        lead = f"{context}: " if context else ""
        super().__init__(f"{lead}{where} did not answer within {waited:.1f} s", attempts=attempts)

    @classmethod
    def of(cls, provider: object, asked_at: float, context: str) -> ProviderNoAnswer:
        """The error of ``provider`` (named by its ``name`` and ``host`` when it has them) for a
        call sent at ``asked_at`` on the :func:`time.monotonic` clock and unanswered now."""
        name = getattr(provider, "name", None)
        host = getattr(provider, "host", None)
        return cls(
            name if isinstance(name, str) else "the provider",
            host if isinstance(host, str) else None,
            time.monotonic() - asked_at,
            context=context,
        )


class ProviderTransientError(ProviderError):
    """A failure worth retrying: rate limit, overload, server error or lost connection.

    Raised to the caller only once the retries are used up (or the next wait would pass the
    deadline); ``retry_after`` is the server's requested wait in seconds when it sent one.
    """

    default_cause = "connection_failed"

    def __init__(
        self,
        provider: str,
        problem: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        cause: str | None = None,
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.problem = problem
        self.status = status
        self.retry_after = retry_after
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{provider}: {code}{problem}", cause=cause, attempts=attempts)


class ReplayMismatch(ProviderError):
    """A replayed provider exchange was unexpected, different, or left unconsumed."""

    default_cause = "replay_mismatch"


class ReplayChanged(ReplayMismatch):
    """A replayed request differs from the one recorded: the answers would be stale.

    ``changed`` names what differs (``prompt``, ``contract``, ``model``, ``evidence``,
    ``conversation``, ``settings``); ``part`` is the first differing part of the request.
    """

    def __init__(self, message: str, *, changed: Sequence[str], part: str | None) -> None:
        self.changed = tuple(changed)
        self.part = part
        super().__init__(message)
