"""Retries for provider calls: the only ones, counted, bounded by the shared deadline.

Adapters disable their SDK's own retries (``max_retries=0``) and translate failures into
:class:`ProviderTransientError` (retry) or another :class:`ProviderError` (give up). A server's
``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date) sets the wait; otherwise the wait
grows exponentially; both get jitter so parallel specialists do not retry in lockstep. A wait
that would cross the deadline is not taken: the call ends with ProviderDeadlineExceeded.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
)
from tenacity.stop import stop_base
from tenacity.wait import wait_exponential_jitter

from active_memory.errors import (
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderTransientError,
    ProviderUnavailable,
)

__all__ = ["RetryPolicy", "call_with_retries", "classify_status", "parse_retry_after"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry. Tests inject ``sleep`` (and ``clock``) to run fast."""

    max_attempts: int = 6
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.monotonic


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """The wait a server asked for, in seconds: ``retry-after-ms`` first, then ``Retry-After``."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now())


class _Wait:
    """The server's Retry-After plus jitter when it sent one, else exponential with jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._backoff = wait_exponential_jitter(
            multiplier=policy.initial_wait, max=policy.max_wait, jitter=policy.jitter
        )

    def __call__(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, ProviderTransientError) and error.retry_after is not None:
            return error.retry_after + random.uniform(0, self._policy.jitter)
        return float(self._backoff(state))


class _StopAtDeadline(stop_base):
    """Stop when the wait before the next attempt would reach the deadline."""

    def __init__(self, deadline: float | None, clock: Callable[[], float]) -> None:
        self._deadline = deadline
        self._clock = clock

    def __call__(self, retry_state: RetryCallState) -> bool:
        if self._deadline is None:
            return False
        return self._clock() + retry_state.upcoming_sleep >= self._deadline


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    provider: str,
    deadline: float | None,
    policy: RetryPolicy,
) -> tuple[T, int]:
    """Run ``call`` until it succeeds; return its result and the number of retries it took.

    Each attempt is cut at the deadline; a transient error is retried while attempts remain and
    the wait ends before the deadline. The last transient error is raised once attempts run out.
    """

    crosses_deadline = _StopAtDeadline(deadline, policy.clock)

    def give_up(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        assert isinstance(error, ProviderTransientError)
        if crosses_deadline(state):
            raise ProviderDeadlineExceeded(
                f"{provider}: not retrying {error.problem!r}: waiting "
                f"{state.upcoming_sleep:.1f}s would pass the deadline "
                f"({state.attempt_number} attempt(s) made)"
            ) from error
        raise ProviderTransientError(
            provider,
            f"{error.problem} (gave up after {state.attempt_number} attempts)",
            status=error.status,
            retry_after=error.retry_after,
        ) from error

    async def attempt() -> T:
        if deadline is None:
            return await call()
        remaining = deadline - policy.clock()
        if remaining <= 0:
            raise ProviderDeadlineExceeded(f"{provider}: the deadline passed before the call")
        scope = asyncio.timeout(remaining)
        try:
            async with scope:
                return await call()
        except TimeoutError as e:
            if not scope.expired():
                raise
            raise ProviderDeadlineExceeded(
                f"{provider}: no response before the deadline ({remaining:.1f}s)"
            ) from e

    retrying = AsyncRetrying(
        sleep=policy.sleep,
        stop=stop_any(stop_after_attempt(policy.max_attempts), crosses_deadline),
        wait=_Wait(policy),
        retry=retry_if_exception_type(ProviderTransientError),
        retry_error_callback=give_up,
    )
    async for attempt_manager in retrying:
        with attempt_manager:
            result = await attempt()
        state = attempt_manager.retry_state
        # The manager swallows a failed attempt so tenacity can decide; only a success returns.
        if state.outcome is not None and not state.outcome.failed:
            return result, state.attempt_number - 1
    raise AssertionError("tenacity ended without an attempt")  # pragma: no cover


def classify_status(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    message: str,
    *,
    credential: str,
) -> ProviderError:
    """The toolkit error for an HTTP error status; the SDKs' own retry rules, made ours.

    408, 409, 429, 5xx and Anthropic's 529 (overloaded) are transient unless the server says
    ``x-should-retry: false``; 401/403 mean the credential is wrong, named by ``credential``.
    """
    hint = headers.get("x-should-retry")
    if status in (401, 403):
        return ProviderUnavailable(
            f"{provider} refused the credential (HTTP {status}: {message}); "
            f"check the value of {credential}"
        )
    retryable = status in (408, 409, 429) or status >= 500
    if hint == "true" or (retryable and hint != "false"):
        return ProviderTransientError(
            provider, message, status=status, retry_after=parse_retry_after(headers)
        )
    return ProviderError(f"{provider}: HTTP {status}: {message}")
