"""The stand-in and the network guard on their own: no CLI, no npm, always run."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any

import pytest

from conformance.kit import foreign_connects
from conformance.stand_in import FINAL_TEXT, StandIn, ToolCall

pytestmark = pytest.mark.conformance


def _read(names: Sequence[str]) -> ToolCall | None:
    return ToolCall("read", {"path": "src/app.py"}) if "read" in names else None


def _post(url: str, body: dict[str, Any]) -> tuple[str, str]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read().decode()


def _events(stream: str) -> list[Any]:
    data = [line[len("data: ") :] for line in stream.splitlines() if line.startswith("data: ")]
    return [json.loads(item) for item in data if item != "[DONE]"]


TOOLS = {
    "/v1/messages": [{"name": "read", "input_schema": {"type": "object"}}],
    "/v1/responses": [{"type": "function", "name": "read", "parameters": {}}],
    "/v1/chat/completions": [{"type": "function", "function": {"name": "read"}}],
}
RESULTS: dict[str, dict[str, Any]] = {
    "/v1/messages": {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}]},
    "/v1/responses": {"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]},
    "/v1/chat/completions": {"messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]},
}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("route", sorted(TOOLS))
def test_the_script_is_one_tool_call_then_the_final_text(route: str, stream: bool) -> None:
    with StandIn(_read) as model:
        url = model.url + route
        start = {"model": "m", "stream": stream, "tools": TOOLS[route], "messages": []}
        kind, first = _post(url, start)
        kind_after, second = _post(url, {**start, **RESULTS[route]})
        _, side = _post(url, {"model": "m", "stream": stream, "messages": []})
    assert kind == kind_after == ("text/event-stream" if stream else "application/json")
    assert '"read"' in first
    assert "src/app.py" in first
    assert FINAL_TEXT in second
    assert FINAL_TEXT not in side
    assert [request.reply for request in model.requests] == ["tool_call", "final", "text"]
    assert model.after_tool() is model.requests[1]
    if stream:
        assert _events(first)  # every data line is JSON
        assert _events(second)


def test_count_tokens_and_unknown_routes() -> None:
    with StandIn(_read) as model:
        _, counted = _post(model.url + "/v1/messages/count_tokens", {"messages": []})
        with pytest.raises(urllib.error.HTTPError) as missing:
            _post(model.url + "/v1/embeddings", {})
    assert json.loads(counted) == {"input_tokens": 12}
    assert missing.value.code == 404
    assert [request.reply for request in model.requests] == ["other", "other"]


def test_foreign_connects_flags_only_addresses_off_loopback() -> None:
    trace = "\n".join([
        '12 connect(3, {sa_family=AF_INET, sin_port=htons(4242), sin_addr=inet_addr("127.0.0.1")}'
        ", 16) = 0",
        '12 connect(4, {sa_family=AF_INET6, sin6_port=htons(80), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0',
        '13 connect(5, {sa_family=AF_UNIX, sun_path="/run/nscd/socket"}, 110) = -1 ENOENT',
        '14 connect(6, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("140.82.1.4")}'
        ", 16) = -1 EINPROGRESS",
        '15 connect(7, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), '
        'inet_pton(AF_INET6, "2606:4700::1", &sin6_addr), sin6_scope_id=0}, 28) = -1',
    ])  # fmt: skip
    foreign = foreign_connects(trace)
    assert len(foreign) == 2
    assert "140.82.1.4" in foreign[0]
    assert "2606:4700::1" in foreign[1]
