"""A Claude Code ``http`` hook request, sent the way Claude Code sends it."""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from active_memory.hooks.install import claude_http_hook
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import RuntimeConfig
from active_memory.store.backend import RunIdentity
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"


@pytest.fixture
def run() -> Iterator[ActiveRun]:
    identity = RunIdentity("run-1", repository=REPOSITORY)
    with open_run(identity, RuntimeConfig(), FakeBackend(widgets_lessons()), WORKSPACE) as active:
        yield active


def interpolate(hook: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """Header values as Claude Code resolves them: only allowedEnvVars, others empty."""
    allowed = set(hook.get("allowedEnvVars", []))

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return env.get(name, "") if name in allowed else ""

    pattern = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
    return {key: pattern.sub(value, text) for key, text in hook["headers"].items()}


def send_like_claude_code(hook: dict[str, Any], env: dict[str, str], body: bytes) -> Any:
    url = urlsplit(hook["url"])
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=hook["timeout"])
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/plain, */*",
        "User-Agent": "claude-cli/2.0.14 (external, cli)",
        **interpolate(hook, env),
    }
    connection.request("POST", url.path, body=body, headers=headers)
    response = connection.getresponse()
    answer = (response.status, response.getheader("Content-Type"), json.loads(response.read()))
    connection.close()
    return answer


def test_http_hook_from_the_run_environment_is_answered(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv/1", "exec-3")
    hook = claude_http_hook(run.broker().url)
    assert hook["type"] == "http"
    status, content_type, answer = send_like_claude_code(
        hook, env, (FIXTURES / "claude" / "edit.json").read_bytes()
    )
    assert (status, content_type) == (200, "application/json")
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert set(output) == {"hookEventName", "additionalContext"}
    assert f"[{lesson_id(2)}@1]" in output["additionalContext"]
    assert f"[{lesson_id(3)}@1]" in output["additionalContext"]
    deadline = time.monotonic() + 5
    while len(run.deliveries) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert {(d.node_id, d.conversation_id, d.execution) for d in run.deliveries} == {
        ("build", "conv/1", "exec-3")
    }


def test_http_hook_with_a_literal_token_is_answered(run: ActiveRun) -> None:
    broker = run.broker()
    hook = claude_http_hook(broker.url, token=broker.token)
    assert "allowedEnvVars" not in hook
    status, _, answer = send_like_claude_code(
        hook, {}, (FIXTURES / "claude" / "read.json").read_bytes()
    )
    assert status == 200
    assert lesson_id(1) in answer["hookSpecificOutput"]["additionalContext"]


def test_http_hook_without_the_token_in_its_environment_is_refused(run: ActiveRun) -> None:
    run.hook_env("build", "conv-1")
    hook = claude_http_hook(run.broker().url)
    status, _, answer = send_like_claude_code(
        hook, {}, (FIXTURES / "claude" / "read.json").read_bytes()
    )
    assert (status, answer) == (401, {})
    assert run.receipts == ()


@pytest.mark.parametrize(
    ("node", "session"), [("build%0Aevil", "s-1\n[lesson] forged"), ("x" * 600, "\u202es-2")]
)
def test_the_manifest_never_records_control_characters_from_a_call(
    run: ActiveRun, node: str, session: str
) -> None:
    broker = run.broker()
    host, port = broker.address
    payload = json.loads((FIXTURES / "claude" / "edit.json").read_bytes())
    payload["session_id"] = session
    connection = http.client.HTTPConnection(host, port, timeout=5)
    headers = {"Authorization": f"Bearer {broker.token}", "X-Active-Memory-Node": node}
    connection.request("POST", "/hook/claude", body=json.dumps(payload), headers=headers)
    response = connection.getresponse()
    assert response.status == 200
    assert "additionalContext" in json.loads(response.read())["hookSpecificOutput"]
    connection.close()
    deadline = time.monotonic() + 5
    while not run.deliveries and time.monotonic() < deadline:
        time.sleep(0.01)
    assert run.deliveries
    for delivery in run.deliveries:
        for text in (delivery.node_id, delivery.conversation_id):
            assert text.isprintable()
            assert len(text) <= 512
