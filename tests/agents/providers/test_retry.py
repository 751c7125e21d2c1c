"""The retry policy on its own: Retry-After parsing, counting, giving up, the deadline."""

from __future__ import annotations

import time

import pytest

from active_memory.agents.providers.retry import RetryPolicy, call_with_retries, parse_retry_after
from active_memory.agents.providers.transport_errors import classify_status
from active_memory.errors import (
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderTransientError,
    ProviderUnavailable,
)
from agents.doubles import FakeSleep


def test_retry_after_accepts_milliseconds_seconds_and_http_dates() -> None:
    now = 1_700_000_000.0
    assert parse_retry_after({"retry-after-ms": "250"}, lambda: now) == 0.25
    assert parse_retry_after({"Retry-After": "7"}, lambda: now) == 7.0
    assert parse_retry_after({"retry-after-ms": "900", "retry-after": "7"}, lambda: now) == 0.9
    date = "Tue, 14 Nov 2023 22:13:30 GMT"  # ten seconds after ``now``
    assert parse_retry_after({"retry-after": date}, lambda: now) == pytest.approx(10.0)
    assert parse_retry_after({"retry-after": "soon"}, lambda: now) is None
    assert parse_retry_after({}, lambda: now) is None


def test_status_codes_map_to_transient_refused_or_plain_errors() -> None:
    def classify(status: int, **headers: str) -> ProviderError:
        return classify_status("p", status, headers, "msg", credential="P_KEY")

    assert isinstance(classify(429), ProviderTransientError)
    assert isinstance(classify(529), ProviderTransientError)
    assert isinstance(classify(503), ProviderTransientError)
    assert isinstance(classify(408), ProviderTransientError)
    assert type(classify(400)) is ProviderError
    assert type(classify(500, **{"x-should-retry": "false"})) is ProviderError
    assert isinstance(classify(400, **{"x-should-retry": "true"}), ProviderTransientError)
    refused = classify(403)
    assert isinstance(refused, ProviderUnavailable)
    assert "check the value of P_KEY" in str(refused)
    causes = {status: classify(status).cause for status in (400, 401, 408, 409, 429, 500, 529)}
    assert causes == {
        400: "http_error",
        401: "auth_failed",
        408: "server_timeout",
        409: "server_conflict",
        429: "rate_limited",
        500: "server_error",
        529: "server_error",
    }


class Flaky:
    def __init__(self, failures: int, retry_after: float | None = None) -> None:
        self.failures = failures
        self.retry_after = retry_after
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ProviderTransientError("p", "busy", status=503, retry_after=self.retry_after)
        return "done"


async def test_success_after_failures_reports_the_retries_and_backs_off(
    fake_sleep: FakeSleep,
) -> None:
    policy = RetryPolicy(max_attempts=5, initial_wait=1.0, max_wait=60, jitter=0, sleep=fake_sleep)
    result, retries = await call_with_retries(
        Flaky(3), provider="p", deadline=time.monotonic() + 1000, policy=policy
    )
    assert (result, retries) == ("done", 3)
    assert fake_sleep.waits == [1.0, 2.0, 4.0]


async def test_jitter_stays_within_its_bound(fake_sleep: FakeSleep) -> None:
    policy = RetryPolicy(max_attempts=9, initial_wait=1.0, jitter=0.5, sleep=fake_sleep)
    await call_with_retries(Flaky(8, retry_after=2.0), provider="p", deadline=None, policy=policy)
    assert all(2.0 <= wait <= 2.5 for wait in fake_sleep.waits)
    assert len(set(fake_sleep.waits)) > 1


async def test_exhausted_attempts_raise_the_last_transient_error(fake_sleep: FakeSleep) -> None:
    policy = RetryPolicy(max_attempts=3, sleep=fake_sleep)
    flaky = Flaky(10)
    with pytest.raises(ProviderTransientError, match=r"^p: HTTP 503: busy \(gave up after 3") as e:
        await call_with_retries(flaky, provider="p", deadline=None, policy=policy)
    assert flaky.calls == 3
    assert (e.value.attempts, e.value.retries) == (3, 2)


async def test_a_wait_that_crosses_the_deadline_is_not_taken_and_keeps_its_cause(
    fake_sleep: FakeSleep,
) -> None:
    policy = RetryPolicy(max_attempts=5, sleep=fake_sleep)
    flaky = Flaky(1, retry_after=30.0)
    with pytest.raises(
        ProviderTransientError,
        match=r"busy \(gave up after 1 attempt: waiting 3\d\.\ds more would pass the "
        r"deadline\)$",
    ) as caught:
        await call_with_retries(flaky, provider="p", deadline=time.monotonic() + 5, policy=policy)
    assert not isinstance(caught.value, ProviderDeadlineExceeded)
    assert caught.value.status == 503
    assert fake_sleep.waits == []
    assert flaky.calls == 1


async def test_other_errors_are_not_retried(fake_sleep: FakeSleep) -> None:
    calls = 0

    async def refused() -> str:
        nonlocal calls
        calls += 1
        raise ProviderError("p: HTTP 400: bad")

    with pytest.raises(ProviderError, match="HTTP 400") as caught:
        await call_with_retries(
            refused, provider="p", deadline=None, policy=RetryPolicy(sleep=fake_sleep)
        )
    assert calls == 1
    assert caught.value.retries == 0


async def test_a_passed_deadline_stops_before_calling(fake_sleep: FakeSleep) -> None:
    flaky = Flaky(0)
    with pytest.raises(ProviderDeadlineExceeded, match="passed before the call"):
        await call_with_retries(
            flaky,
            provider="p",
            deadline=time.monotonic() - 1,
            policy=RetryPolicy(sleep=fake_sleep),
        )
    assert flaky.calls == 0
