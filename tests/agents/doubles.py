"""Test doubles for the HTTP layer and the retry clock, shared by provider and session tests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import httpx2


class FakeSleep:
    """Records the waits it is asked for and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


Reply = Callable[[httpx2.Request], Any]


class MockAPI:
    """An HTTP server script: each request takes the next reply; every request is kept."""

    def __init__(self) -> None:
        self._replies: list[Reply] = []
        self.requests: list[httpx2.Request] = []

    def reply(
        self, body: Any = None, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> MockAPI:
        self._replies.append(
            lambda request: httpx2.Response(status, json=body, headers=headers or {})
        )
        return self

    def hang(self) -> MockAPI:
        async def forever(request: httpx2.Request) -> httpx2.Response:
            await asyncio.sleep(3600)
            raise AssertionError("unreachable")

        self._replies.append(forever)
        return self

    def drop_connection(self) -> MockAPI:
        def refuse(request: httpx2.Request) -> httpx2.Response:
            raise httpx2.ConnectError("connection refused", request=request)

        self._replies.append(refuse)
        return self

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self._replies:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        result = self._replies.pop(0)(request)
        if asyncio.iscoroutine(result):
            result = await result
        assert isinstance(result, httpx2.Response)
        return result

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    def body(self, index: int = -1) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.requests[index].content)
        return data

    @property
    def unused(self) -> int:
        return len(self._replies)


def anthropic_message(
    *blocks: dict[str, Any],
    stop_reason: str = "end_turn",
    usage: dict[str, int] | None = None,
    model: str = "claude-test",
) -> dict[str, Any]:
    """A Messages API response body."""
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }


def tool_use(name: str, arguments: dict[str, Any], id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": arguments}


def chat_completion(
    *,
    content: str | None = None,
    tool_calls: Sequence[tuple[str, str, str]] = (),
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "gpt-test",
) -> dict[str, Any]:
    """A Chat Completions response body; ``tool_calls`` are (id, name, raw arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id, name, arguments in tool_calls
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
