"""A scripted model on loopback, speaking just enough of three wire APIs for the real CLIs.

It answers the Anthropic Messages API (``POST …/messages``, Claude Code and Copilot's
``anthropic`` provider), the OpenAI Responses API (``POST …/responses``, Codex) and OpenAI Chat
Completions (``POST …/chat/completions``, pi and Copilot's default provider), streaming
(server-sent events) or not, as the request asks.

The script has two steps, decided from the request alone so retries and side requests (a
title, a quota probe) cannot knock it off course:

1. a request that offers the scripted tool and holds no tool result gets one call of that tool
   (for example ``Read`` of the file that has a lesson);
2. a request that holds a tool result gets the final text.

Anything else (no tools, another shape) gets a short plain text. Every request body is
recorded, so a test can read what the model was sent after the tool ran.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FINAL_TEXT", "Recorded", "StandIn", "ToolCall", "ToolChooser", "tool_names"]

FINAL_TEXT = "Conformance stand-in: the file was read."
CALL_ID = "call_am_conformance_1"
MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ToolCall:
    """The one tool call the model makes: a name the harness offered and its arguments."""

    name: str
    arguments: Mapping[str, Any]


# Given the names of the tools a request offers, the call to make (None: not this request).
ToolChooser = Callable[[Sequence[str]], ToolCall | None]


@dataclass(frozen=True, slots=True)
class Recorded:
    method: str
    path: str
    body: Any  # the parsed JSON body, or the raw text when it is not JSON
    reply: str  # "tool_call", "final", "text" or "other"

    @property
    def text(self) -> str:
        """The whole body as one string, for substring assertions."""
        return self.body if isinstance(self.body, str) else json.dumps(self.body)


def tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools a request offers, in any of the three APIs' shapes."""
    names: list[str] = []
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        if isinstance(name, str):
            names.append(name)
        elif isinstance(tool.get("type"), str):
            names.append(tool["type"])  # a built-in such as Responses' local_shell
    return names


_RESULT_TYPES = frozenset({"tool_result", "function_call_output", "custom_tool_call_output"})


def _walk(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def holds_tool_result(body: Mapping[str, Any]) -> bool:
    """Whether the conversation sent already holds a tool's result (any API)."""
    for node in _walk([body.get("messages"), body.get("input")]):
        if node.get("type") in _RESULT_TYPES or node.get("role") == "tool":
            return True
    return False


def _sse(events: Sequence[tuple[str | None, Mapping[str, Any] | str]]) -> bytes:
    chunks: list[str] = []
    for event, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        chunks.append((f"event: {event}\n" if event else "") + f"data: {text}\n\n")
    return "".join(chunks).encode("utf-8")


# --- Anthropic Messages -----------------------------------------------------------------------


def _anthropic(body: Mapping[str, Any], call: ToolCall | None, text: str) -> tuple[Any, bytes]:
    model = str(body.get("model") or "stand-in")
    usage = {
        "input_tokens": 12,
        "output_tokens": 6,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if call is not None:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": "toolu_" + CALL_ID,
            "name": call.name,
            "input": dict(call.arguments),
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": text}
        stop = "end_turn"
    message = {
        "id": "msg_stand_in",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not body.get("stream"):
        return message, b""
    start = {**message, "content": [], "stop_reason": None}
    if call is not None:
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(call.arguments))}
    else:
        opened = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
    events: list[tuple[str | None, Mapping[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": opened},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 6},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return None, _sse(events)


# --- OpenAI Responses -------------------------------------------------------------------------


def _responses(body: Mapping[str, Any], call: ToolCall | None, text: str) -> tuple[Any, bytes]:
    model = str(body.get("model") or "stand-in")
    if call is not None:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": "fc_stand_in",
            "call_id": CALL_ID,
            "name": call.name,
            "status": "completed",
            "arguments": json.dumps(dict(call.arguments)),
        }
    else:
        item = {
            "type": "message",
            "id": "msg_stand_in",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    usage = {
        "input_tokens": 12,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 6,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 18,
    }
    response = {
        "id": "resp_stand_in",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [item],
        "usage": usage,
        "error": None,
        "incomplete_details": None,
    }
    if not body.get("stream"):
        return response, b""
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str | None, Mapping[str, Any] | str]] = [
        (
            "response.created",
            {"type": "response.created", "sequence_number": 0, "response": pending},
        ),
        (
            "response.in_progress",
            {"type": "response.in_progress", "sequence_number": 1, "response": pending},
        ),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": 2,
                "output_index": 0,
                "item": {**item, "status": "in_progress"},
            },
        ),
    ]
    if call is None:
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": 3,
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": text,
                },
            )
        )
    events += [
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "sequence_number": 4,
                "output_index": 0,
                "item": item,
            },
        ),
        (
            "response.completed",
            {"type": "response.completed", "sequence_number": 5, "response": response},
        ),
    ]
    return None, _sse(events)


# --- OpenAI Chat Completions ------------------------------------------------------------------


def _chat(body: Mapping[str, Any], call: ToolCall | None, text: str) -> tuple[Any, bytes]:
    model = str(body.get("model") or "stand-in")
    usage = {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
    if call is not None:
        tool_call = {
            "id": CALL_ID,
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(dict(call.arguments))},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": text}
        finish = "stop"
    base = {"id": "chatcmpl-stand-in", "created": 0, "model": model}
    if not body.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        return {**base, "object": "chat.completion", "choices": [choice], "usage": usage}, b""
    chunk = {**base, "object": "chat.completion.chunk"}
    if call is not None:
        delta: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"index": 0, **tool_call}],
        }
    else:
        delta = {"role": "assistant", "content": text}
    events: list[tuple[str | None, Mapping[str, Any] | str]] = [
        (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**chunk, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return None, _sse(events)


_APIS = (("/chat/completions", _chat), ("/responses", _responses), ("/messages", _anthropic))


@dataclass
class StandIn:
    """The scripted model server; use as a context manager, read ``requests`` afterwards."""

    choose: ToolChooser
    final_text: str = FINAL_TEXT
    requests: list[Recorded] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the stand-in is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                stand_in._record("GET", self.path, "", "other")
                if self.path.rstrip("/").endswith("/models"):
                    models = {
                        "object": "list",
                        "data": [
                            {
                                "id": "stand-in",
                                "object": "model",
                                "created": 0,
                                "owned_by": "stand-in",
                            }
                        ],
                    }
                    self._send(200, "application/json", json.dumps(models).encode())
                    return
                self._send(404, "application/json", b'{"error":{"message":"not found"}}')

            def do_HEAD(self) -> None:
                self._send(200, "text/plain", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(min(length, MAX_BODY)).decode("utf-8", "replace")
                try:
                    body: Any = json.loads(raw) if raw else {}
                except ValueError:
                    body = raw
                status, content_type, payload = stand_in._answer(self.path, body)
                self._send(status, content_type, payload)

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # close() waits for one poll
            daemon=True,
            name="conformance-stand-in",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, method: str, path: str, body: Any, reply: str) -> None:
        with self._lock:
            self.requests.append(Recorded(method, path, body, reply))

    def _answer(self, path: str, body: Any) -> tuple[int, str, bytes]:
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/count_tokens"):
            self._record("POST", path, body, "other")
            return 200, "application/json", b'{"input_tokens": 12}'
        api = next((build for suffix, build in _APIS if route.endswith(suffix)), None)
        if api is None or not isinstance(body, dict):
            self._record("POST", path, body, "other")
            return 404, "application/json", b'{"error":{"message":"not found"}}'
        call: ToolCall | None = None
        if holds_tool_result(body):
            reply = "final"
        else:
            call = self.choose(tool_names(body))
            reply = "tool_call" if call is not None else "text"
        self._record("POST", path, body, reply)
        text = self.final_text if reply == "final" else "Stand-in side answer."
        document, stream = api(body, call, text)
        if document is not None:
            return HTTPStatus.OK, "application/json", json.dumps(document).encode("utf-8")
        return HTTPStatus.OK, "text/event-stream", stream

    # --- what tests read ----------------------------------------------------------------------

    def replies(self, kind: str) -> list[Recorded]:
        with self._lock:
            return [request for request in self.requests if request.reply == kind]

    def after_tool(self) -> Recorded | None:
        """The first request that carried the tool's result back to the model."""
        finals = self.replies("final")
        return finals[0] if finals else None


class _QuietServer(ThreadingHTTPServer):
    """A harness the test killed mid-answer (the deadline tests) closes its socket under the
    reply: that is the test working, not an error to print into the run's output."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
