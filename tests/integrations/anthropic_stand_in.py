"""A loopback stand-in for the Anthropic Messages API, for the Claude Code CLI the SDK spawns.

Like the conformance suite's stand-in (served to the CLI through ``ANTHROPIC_BASE_URL``), but
scripted per conversation: a request whose first user message holds a script's marker gets that
script's next tool call (one per tool result already in the conversation), then the final text.
A request offering no tools (a title, a probe) gets a short text. Streams (SSE) or not, as asked.
Every request body is kept for the test to read.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from conformance.stand_in import ToolCall, holds_tool_result, tool_names

__all__ = ["AnthropicStandIn", "ToolCall", "claude_cli"]

FINAL_TEXT = "Stand-in: done."
MAX_BODY = 16 * 1024 * 1024


def claude_cli() -> str | None:
    """The CLI the Claude Agent SDK spawns: the one it bundles, else the conformance suite's
    cached npm install of @anthropic-ai/claude-code (installed on first use); None without
    either."""
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    from conformance.harnesses import HARNESSES, install

    done = install(HARNESSES["claude"])
    return str(done.binary) if done.binary is not None else None


def _first_user_text(body: Mapping[str, Any]) -> str:
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            return json.dumps(message.get("content"))
    return ""


def _results(body: Mapping[str, Any]) -> int:
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                count += 1
    return count


def _events(message: Mapping[str, Any], block: Mapping[str, Any]) -> bytes:
    start = {**message, "content": [], "stop_reason": None}
    if block["type"] == "tool_use":
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        opened = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": opened}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                           "usage": {"output_tokens": 6}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()


class AnthropicStandIn:
    """The scripted server; ``scripts`` maps a prompt marker to the tool calls to make."""

    def __init__(self, scripts: Mapping[str, Sequence[ToolCall]]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._calls = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            script = next((calls for marker, calls in self.scripts.items()
                           if marker in _first_user_text(body)), ())  # fmt: skip
            done = _results(body)
            offered = tool_names(body)
            block: dict[str, Any]
            if offered and done < len(script) and script[done].name in offered:
                self._calls += 1
                call = script[done]
                block = {"type": "tool_use", "id": f"toolu_stand_in_{self._calls}",
                         "name": call.name, "input": dict(call.arguments)}  # fmt: skip
            else:
                text = FINAL_TEXT if holds_tool_result(body) or not offered else "Stand-in."
                block = {"type": "text", "text": text}
        message = {
            "id": f"msg_stand_in_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or "stand-in"),
            "content": [block],
            "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 6, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0},
        }  # fmt: skip
        return message, block

    def __enter__(self) -> AnthropicStandIn:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, content_type: str, payload: bytes, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_HEAD(self) -> None:
                self._send("text/plain", b"")

            def do_GET(self) -> None:
                self._send("application/json", b'{"error":{"message":"not found"}}', 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(min(length, MAX_BODY))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                route = self.path.split("?", 1)[0].rstrip("/")
                if route.endswith("/count_tokens"):
                    self._send("application/json", b'{"input_tokens": 12}')
                    return
                if not route.endswith("/messages") or not isinstance(body, dict):
                    self._send("application/json", b'{"error":{"message":"not found"}}', 404)
                    return
                message, block = stand_in.reply(body)
                if body.get("stream"):
                    self._send("text/event-stream", _events(message, block))
                else:
                    self._send("application/json", json.dumps(message).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def after_tool(self, marker: str) -> list[str]:
        """Every request body of ``marker``'s conversation that carried a tool result, as text."""
        with self._lock:
            return [json.dumps(body) for body in self.requests
                    if marker in _first_user_text(body) and _results(body)]  # fmt: skip
