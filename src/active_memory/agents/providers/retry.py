"""Retries for provider calls: the only ones, counted, bounded by the shared deadline.

Adapters disable their SDK's own retries (``max_retries=0``) and translate failures into
:class:`ProviderTransientError` (retry) or another :class:`ProviderError` (give up). A server's
``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date) sets the wait; otherwise the wait
grows exponentially; both get jitter so parallel specialists do not retry in lockstep. A wait
that would cross the deadline is not taken: the call ends with the failure it had, its cause
kept and its attempts counted, because the deadline has not passed. ProviderDeadlineExceeded is
raised only once it has (an attempt cut at the deadline, or none left to make). Every error
leaving :func:`call_with_retries` carries the number of attempts made.
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
    ProviderNoAnswer,
    ProviderTransientError,
)

__all__ = ["RetryPolicy", "call_with_retries", "parse_retry_after"]

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


def _attempts(count: int) -> str:
    return f"{count} attempt" if count == 1 else f"{count} attempts"


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    provider: str,
    deadline: float | None,
    policy: RetryPolicy,
    host: str | None = None,
) -> tuple[T, int]:
    """Run ``call`` until it succeeds; return its result and the number of retries it took.

    Each attempt is cut at the deadline; a transient error is retried while attempts remain and
    the wait ends before the deadline. The last transient error is raised once attempts run out.
    An attempt cut at the deadline is :class:`ProviderNoAnswer`, naming ``host`` (the server's
    ``host[:port]``) and how long it waited.
    """

    crosses_deadline = _StopAtDeadline(deadline, policy.clock)
    attempts = 0

    def give_up(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        assert isinstance(error, ProviderTransientError)
        why = ""
        if crosses_deadline(state):
            why = f": waiting {state.upcoming_sleep:.1f}s more would pass the deadline"
        raise ProviderTransientError(
            provider,
            f"{error.problem} (gave up after {_attempts(state.attempt_number)}{why})",
            status=error.status,
            retry_after=error.retry_after,
            cause=error.cause,
            attempts=state.attempt_number,
        ) from error

    async def attempt() -> T:
        nonlocal attempts
        attempts += 1
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
            raise ProviderNoAnswer(provider, host, remaining) from e

    retrying = AsyncRetrying(
        sleep=policy.sleep,
        stop=stop_any(stop_after_attempt(policy.max_attempts), crosses_deadline),
        wait=_Wait(policy),
        retry=retry_if_exception_type(ProviderTransientError),
        retry_error_callback=give_up,
    )
    try:
        async for attempt_manager in retrying:
            with attempt_manager:
                result = await attempt()
            state = attempt_manager.retry_state
            # The manager swallows a failed attempt so tenacity can decide; only a success
            # returns.
            if state.outcome is not None and not state.outcome.failed:
                return result, state.attempt_number - 1
    except ProviderError as error:
        # A failure that is not retried (a refused credential, the deadline) still says how
        # many calls this request took.
        error.attempts = max(error.attempts, attempts)
        raise
    raise AssertionError("tenacity ended without an attempt")  # pragma: no cover
