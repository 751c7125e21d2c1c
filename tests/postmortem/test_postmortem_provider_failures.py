"""Why a specialist failed, kept to the report and the run log: a real SDK adapter on the wire.

Each cause (a server that is not there, a name that does not resolve, a certificate, a refused
credential, a rate limit, a server error that never ends, a body that is not the API, an answer
that is not JSON, a refusal, an answer that breaks its contract) gets its own code and message,
with the retries it spent, in the report and in the run log. A deadline is reported only when it
passed.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from active_memory.agents.providers.anthropic import AnthropicProvider
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.openai import OpenAIProvider
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.errors import ProviderDeadlineExceeded, ProviderNoAnswer
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.failures import classify
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.runlog import RunLog, read_events
from agents.doubles import FakeSleep, MockAPI, anthropic_message, chat_completion
from postmortem.postmortem_kit import config_of, first_run, store_at

pytestmark = pytest.mark.timeout(60)

EMPTY = json.dumps({"lessons": []})
LOCAL = "http://127.0.0.1:8080/v1"


@pytest.fixture
def api() -> MockAPI:
    return MockAPI()


@pytest.fixture
def fake_sleep() -> FakeSleep:
    return FakeSleep()


class AdvancingClock:
    """A monotonic clock that a retry's sleep moves forward instead of waiting."""

    def __init__(self) -> None:
        self.offset = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return time.monotonic() + self.offset

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.offset += seconds


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _openai(base_url: str, retry: RetryPolicy, api: MockAPI | None = None) -> OpenAIProvider:
    endpoint = Endpoint("local", None, None, base_url, None)
    client = api.client() if api is not None else None
    return OpenAIProvider(lane="compatible", endpoint=endpoint, env={}, http_client=client,
                          retry=retry)  # fmt: skip


async def _postmortem(
    tmp_path: Path, provider: Any, *, timeout_ms: int = 600_000
) -> tuple[PostmortemReport, list[dict[str, Any]]]:
    """Graph scope only: graph discovery is the one session (maintenance has no lessons)."""
    _, record = first_run(tmp_path)
    log = RunLog(tmp_path / "log.jsonl")
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=config_of(repository=False, timeout_ms=timeout_ms), backend=store,
            private_dir=tmp_path / "evidence", provider=provider, run_log=log,
            new_id=sequential_ids(),
        ))  # fmt: skip
    return report, read_events(tmp_path / "log.jsonl")


def _logged(events: list[dict[str, Any]], role: str) -> dict[str, Any]:
    return next(e for e in events if e["event"] == "postmortem_specialist" and e["role"] == role)


def _summary(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["event"] == "postmortem")


def _raising(error: BaseException) -> Callable[[httpx2.Request], httpx2.Response]:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connect failed", request=request) from error

    return handler


def _script(api: MockAPI, *replies: Any) -> MockAPI:
    for reply in replies:
        if callable(reply):
            api._replies.append(reply)
        else:
            body, status = reply if isinstance(reply, tuple) else (reply, 200)
            api.reply(body, status=status)
    return api


def _answer_call(arguments: str) -> dict[str, Any]:
    return chat_completion(tool_calls=[("c1", "graph_discovery", arguments)],
                           finish_reason="tool_calls")  # fmt: skip


def _refusal() -> dict[str, Any]:
    body = chat_completion(content=None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    return body


ERROR_500 = ({"error": {"message": "model crashed"}}, 500)
CASES: dict[str, tuple[list[Any], str, str, int]] = {
    # name: (replies, error code, words of the message, retries)
    "dns": (
        [_raising(socket.gaierror(socket.EAI_NONAME, "Name or service not known"))],
        "dns_failed",
        "does not resolve (DNS: Name or service not known)",
        0,
    ),
    "tls": (
        [_raising(ssl.SSLCertVerificationError(1, "certificate verify failed"))],
        "tls_failed",
        "the TLS handshake with 127.0.0.1:8080 failed",
        0,
    ),
    "unauthorized": (
        [({"error": {"message": "invalid api key"}}, 401)],
        "auth_failed",
        "refused the credential (HTTP 401: invalid api key)",
        0,
    ),
    "server error forever": (
        [ERROR_500] * 4,
        "server_error",
        "HTTP 500: model crashed (gave up after 4 attempts)",
        3,
    ),
    "not the API": (
        [lambda request: httpx2.Response(200, text="<html>hello</html>")],
        "malformed_response",
        "127.0.0.1:8080 sent a response that is not a valid API answer",
        0,
    ),
    "answer not JSON": (
        [_answer_call('{"lessons": ['), _answer_call("{nope")],
        "malformed_answer",
        "was not valid JSON, also after one repair turn",
        0,
    ),
    "refusal": ([_refusal()], "model_refused", "the model refused to give a", 0),
    "contract": (
        [_answer_call('{"lessons": "nope"}'), _answer_call('{"lessons": "still nope"}')],
        "contract_violation",
        "did not satisfy contract 'graph_discovery' after one repair turn",
        0,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_each_failure_keeps_its_cause_in_the_report_and_the_run_log(
    case: str, tmp_path: Path, api: MockAPI, fake_sleep: FakeSleep
) -> None:
    replies, code, words, retries = CASES[case]
    retry = RetryPolicy(max_attempts=4, sleep=fake_sleep)
    provider = _openai(LOCAL, retry, _script(api, *replies))

    report, events = await _postmortem(tmp_path, provider)

    failed = report.specialist("graph_discovery")
    assert (failed.status, failed.error_code, failed.retries) == ("failed", code, retries)
    assert failed.error is not None
    assert words in failed.error
    assert "nope" not in failed.error  # never the answer's text
    assert api.unused == 0
    logged = _logged(events, "graph_discovery")
    assert (logged["status"], logged["error_code"], logged["retries"]) == (
        "failed",
        code,
        retries,
    )
    summary = _summary(events)
    # Graph maintenance had no lessons to decide (no session): the one with work failed.
    assert (summary["status"], summary["reason_code"]) == ("failed", code)
    route = (summary["provider"], summary["lane"], summary["host"], summary["model"])
    assert route == ("openai", "compatible", "127.0.0.1:8080", "claude-sonnet-4-5")


def test_every_cause_reads_differently() -> None:
    codes = [code for _, code, _, _ in CASES.values()]
    assert len(set(codes)) == len(codes)


async def test_an_unreachable_server_is_a_refused_connection_with_its_attempts(
    tmp_path: Path, fake_sleep: FakeSleep
) -> None:
    port = _closed_port()
    provider = _openai(f"http://127.0.0.1:{port}/v1", RetryPolicy(max_attempts=3, sleep=fake_sleep))

    report, events = await _postmortem(tmp_path, provider)

    failed = report.specialist("graph_discovery")
    assert (failed.status, failed.error_code, failed.retries) == ("failed", "connection_refused", 2)
    assert failed.error == (
        f"openai/compatible: connection refused by 127.0.0.1:{port}; is the server running "
        "there? (gave up after 3 attempts)"
    )
    assert (_logged(events, "graph_discovery")["error_code"], report.host) == (
        "connection_refused",
        f"127.0.0.1:{port}",
    )


async def test_retries_that_would_outlast_the_deadline_report_the_cause_not_the_deadline(
    tmp_path: Path,
) -> None:
    """The first real run: an unreachable server and a 20 s deadline read "the shared
    postmortem deadline passed" at 17.7 s with retries 0. It is the refused connection."""
    clock = AdvancingClock()
    port = _closed_port()
    retry = RetryPolicy(sleep=clock.sleep, clock=clock)  # the default waits: 1, 2, 4, 8, ...
    provider = _openai(f"http://127.0.0.1:{port}/v1", retry)

    report, events = await _postmortem(tmp_path, provider, timeout_ms=20_000)

    failed = report.specialist("graph_discovery")
    assert report.status == "failed"
    assert (failed.status, failed.error_code) == ("failed", "connection_refused")
    assert failed.retries == len(clock.waits) >= 3
    assert failed.error is not None
    assert "more would pass the deadline" in failed.error
    assert "deadline passed" not in failed.error
    assert _logged(events, "graph_discovery")["retries"] == failed.retries


async def test_a_rate_limit_then_success_counts_its_retry(
    tmp_path: Path, api: MockAPI, fake_sleep: FakeSleep
) -> None:
    api.reply({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "2"})
    api.reply(_answer_call(EMPTY))
    provider = _openai(LOCAL, RetryPolicy(max_attempts=4, sleep=fake_sleep), api)

    report, events = await _postmortem(tmp_path, provider)

    done = report.specialist("graph_discovery")
    assert (done.status, done.error_code, done.retries) == ("nothing_to_do", None, 1)
    assert report.ok
    assert 2.0 <= fake_sleep.waits[0] <= 3.0
    assert (_logged(events, "graph_discovery")["retries"], _summary(events)["retries"]) == (1, 1)


async def test_a_rate_limit_that_never_ends_is_a_rate_limit(
    tmp_path: Path, api: MockAPI, fake_sleep: FakeSleep
) -> None:
    for _ in range(3):
        api.reply({"error": {"message": "slow down"}}, status=429)
    provider = _openai(LOCAL, RetryPolicy(max_attempts=3, sleep=fake_sleep), api)

    report, _ = await _postmortem(tmp_path, provider)

    failed = report.specialist("graph_discovery")
    assert (failed.error_code, failed.retries) == ("rate_limited", 2)
    assert failed.error == "openai/compatible: HTTP 429: slow down (gave up after 3 attempts)"


async def test_a_hanging_server_is_the_deadline_and_only_then(tmp_path: Path, api: MockAPI) -> None:
    api.hang()
    provider = _openai(LOCAL, RetryPolicy(), api)

    report, events = await _postmortem(tmp_path, provider, timeout_ms=1_500)

    stopped = report.specialist("graph_discovery")
    assert (stopped.status, stopped.error_code) == ("timed_out", "timed_out")
    assert report.status == "timed_out"
    assert _summary(events)["reason_code"] == "timed_out"
    # Not a slow model: the server never answered, and the report names it and the wait.
    assert stopped.error is not None
    assert stopped.error.startswith("the provider did not answer in time: "), stopped.error
    # The wait is what was left of the 1.5 s once the evidence was built: less on a loaded
    # machine, never more.
    waited = re.search(r"openai/compatible at 127\.0\.0\.1:8080 did not answer within (\d\.\d) s",
                       stopped.error)  # fmt: skip
    assert waited is not None, stopped.error
    assert 0 < float(waited.group(1)) <= 1.5
    assert report.reason == stopped.error


async def test_an_anthropic_refusal_is_a_refusal(tmp_path: Path, api: MockAPI) -> None:
    api.reply(anthropic_message({"type": "text", "text": "I won't."}, stop_reason="refusal"))
    provider = AnthropicProvider(
        env={"ANTHROPIC_API_KEY": "sk-ant-test-not-a-real-key"},
        http_client=api.client(),
        retry=RetryPolicy(max_attempts=1),
    )

    report, events = await _postmortem(tmp_path, provider)

    failed = report.specialist("graph_discovery")
    assert (failed.status, failed.error_code, failed.batches) == ("failed", "model_refused", 1)
    assert _summary(events)["host"] == "api.anthropic.com"


async def test_a_provider_override_logs_the_lane_it_runs_on_never_null(
    tmp_path: Path, api: MockAPI
) -> None:
    from active_memory.models.runs import Binding
    from active_memory.postmortem.binding import BindingOverride

    api.reply(chat_completion(content=EMPTY))
    made: list[Binding] = []

    def factory(binding: Binding) -> OpenAIProvider:
        made.append(binding)
        key = {"OPENAI_API_KEY": "sk-test-not-a-real-key-000"}
        return OpenAIProvider(env=key, http_client=api.client(), retry=RetryPolicy(max_attempts=1))

    _, record = first_run(tmp_path)
    log = RunLog(tmp_path / "log.jsonl")
    with store_at(tmp_path) as store:
        report = await run_postmortem(record, PostmortemOptions(
            config=config_of(repository=False), backend=store, private_dir=tmp_path / "e",
            provider_factory=factory, override=BindingOverride(provider="openai", model="gpt-x"),
            run_log=log,
        ))  # fmt: skip
    assert made[0].lane is None  # the inherited claude-code lane belongs to another provider
    summary = _summary(read_events(tmp_path / "log.jsonl"))
    assert (summary["provider"], summary["lane"], summary["host"], summary["model"]) == (
        "openai",
        "openai",
        "api.openai.com",
        "gpt-x",
    )
    assert (report.lane, report.host) == ("openai", "api.openai.com")


def test_a_server_that_did_not_answer_reads_apart_from_a_slow_model() -> None:
    hung = classify(
        ProviderNoAnswer("openai/compatible", "127.0.0.1:8080", 600.02, context="turn 3"),
        cancelled=False,
    )
    slow = classify(
        ProviderDeadlineExceeded("session of specialist 'x' batch 0: the deadline passed after "
                                 "9 turn(s)"),
        cancelled=False,
    )  # fmt: skip
    assert (hung.status, hung.code) == (slow.status, slow.code) == ("timed_out", "timed_out")
    assert hung.message == (
        "the provider did not answer in time: turn 3: openai/compatible at 127.0.0.1:8080 did "
        "not answer within 600.0 s"
    )
    assert slow.message.startswith("stopped at the deadline: ")
    assert "did not answer" not in slow.message
