"""A loopback model stand-in: a tiny HTTP server speaking two wire formats, scripted.

It answers OpenAI Chat Completions (``POST …/chat/completions``) and Anthropic Messages
(``POST …/messages``) the way a well-behaved small model would: on a turn whose conversation
holds no tool result yet it calls an investigation tool it was offered (``list_folder`` on the
first root the tool's schema allows); afterwards it gives a minimal answer that satisfies the
contract, in whatever output mode the request uses (the answer tool, native structured output,
or the schema the prompt shows). It reports token usage. It is no model: it exercises the
transport, the tool loop and the output modes end to end over real sockets, nothing more.

With ``text_calls`` (``--text-calls``) it answers Chat Completions as a small model does that
the server's tool parser misses: each call, the answer tool's included, is the whole reply
written as fenced JSON text (``{"name": ..., "arguments": {...}}``), never a tool call.

Run it for the opt-in live test (it prints its base URL and serves until stopped)::

    python tests/agents/loopback_model.py --port 8089            # add --text-calls for text
    ACTIVE_MEMORY_LIVE_BASE_URL=http://127.0.0.1:8089/v1 ACTIVE_MEMORY_LIVE_MODEL=stand-in \\
    ACTIVE_MEMORY_LIVE_LANE=compatible pytest tests/agents/test_live_conformance.py

(``…_LANE=anthropic`` takes ``http://127.0.0.1:8089`` as the base URL.)
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

INVESTIGATION = ("list_folder", "read_file", "search_text", "read_transcript")
_SCHEMA_BLOCK = re.compile(r"```json\n(?P<schema>.*?)\n```", re.DOTALL)
_MAX_BODY = 16 * 1024 * 1024


def minimal_instance(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Any:
    """The smallest value a (simple) JSON Schema accepts: required keys only, empty lists."""
    root = root or schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return minimal_instance(target, root)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return minimal_instance(schema[key][0], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    kinds = kind if isinstance(kind, list) else [kind]
    if "null" in kinds:
        return None
    first = kinds[0]
    if first == "object":
        properties = schema.get("properties", {})
        return {
            name: minimal_instance(properties.get(name, {}), root)
            for name in schema.get("required", ())
        }
    if first == "array":
        return [
            minimal_instance(schema.get("items", {}), root)
            for _ in range(schema.get("minItems", 0))
        ]
    if first == "string":
        return "x" * int(schema.get("minLength", 0))
    if first in ("integer", "number"):
        return schema.get("minimum", 0)
    if first == "boolean":
        return False
    return None


def _usage_counts(body: bytes) -> tuple[int, int]:
    return max(1, len(body) // 4), 12


def _root_of(parameters: Mapping[str, Any]) -> str:
    root = parameters.get("properties", {}).get("root", {})
    values = root.get("enum") or ["checkout"]
    return str(values[0])


def _prompted_schema(system: str) -> dict[str, Any] | None:
    blocks = _SCHEMA_BLOCK.findall(system)
    for block in reversed(blocks):
        try:
            value = json.loads(block)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") == "object":
            return value
    return None


# -- OpenAI Chat Completions ------------------------------------------------------------------


def _as_text(message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``message``'s one tool call written as fenced JSON text, as small models write it."""
    function = message.pop("tool_calls")[0]["function"]
    call = {"name": function["name"], "arguments": json.loads(function["arguments"])}
    message["content"] = f"```json\n{json.dumps(call)}\n```"
    return message, "stop"


def _openai_reply(
    request: Mapping[str, Any], raw: bytes, *, text_calls: bool = False
) -> dict[str, Any]:
    tools = {t["function"]["name"]: t["function"] for t in request.get("tools", ())}
    answer_tools = [name for name in tools if name not in INVESTIGATION]
    messages = request.get("messages", [])
    investigated = any(message.get("role") == "tool" for message in messages)
    forced = request.get("tool_choice") not in (None, "auto", "none")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if not investigated and not forced and "list_folder" in tools:
        arguments = {"root": _root_of(tools["list_folder"]["parameters"]), "path": ""}
        call = {"name": "list_folder", "arguments": json.dumps(arguments)}
        message["tool_calls"] = [{"id": "call_standin_1", "type": "function", "function": call}]
        finish = "tool_calls"
    elif answer_tools:
        schema = tools[answer_tools[0]]["parameters"]
        call = {"name": answer_tools[0], "arguments": json.dumps(minimal_instance(schema))}
        message["tool_calls"] = [{"id": "call_standin_2", "type": "function", "function": call}]
        finish = "tool_calls"
    else:
        format_ = request.get("response_format") or {}
        schema = format_.get("json_schema", {}).get("schema")
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        schema = schema or _prompted_schema(system)
        message["content"] = json.dumps(minimal_instance(schema)) if schema else "Done."
    if text_calls and "tool_calls" in message:
        message, finish = _as_text(message)
    prompt, completion = _usage_counts(raw)
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model", "stand-in"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


# -- Anthropic Messages -----------------------------------------------------------------------


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    return "".join(block.get("text", "") for block in system or ())


def _anthropic_reply(request: Mapping[str, Any], raw: bytes) -> dict[str, Any]:
    tools = {t["name"]: t for t in request.get("tools", ())}
    answer_tools = [name for name in tools if name not in INVESTIGATION]
    investigated = any(
        isinstance(message.get("content"), list)
        and any(block.get("type") == "tool_result" for block in message["content"])
        for message in request.get("messages", ())
    )
    forced = (request.get("tool_choice") or {}).get("type") == "tool"
    content: list[dict[str, Any]]
    stop = "end_turn"
    if not investigated and not forced and "list_folder" in tools:
        arguments = {"root": _root_of(tools["list_folder"]["input_schema"]), "path": ""}
        content = [
            {"type": "tool_use", "id": "toolu_standin_1", "name": "list_folder", "input": arguments}
        ]
        stop = "tool_use"
    elif answer_tools:
        value = minimal_instance(tools[answer_tools[0]]["input_schema"])
        content = [
            {"type": "tool_use", "id": "toolu_standin_2", "name": answer_tools[0], "input": value}
        ]
        stop = "tool_use"
    else:
        schema = (request.get("output_config") or {}).get("format", {}).get("schema")
        schema = schema or _prompted_schema(_system_text(request.get("system")))
        text = json.dumps(minimal_instance(schema)) if schema else "Done."
        content = [{"type": "text", "text": text}]
    prompt, completion = _usage_counts(raw)
    return {
        "id": "msg_standin",
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "stand-in"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }


class _Server(ThreadingHTTPServer):
    """Keeps, per request, its path and the credential headers it carried."""

    def __init__(
        self,
        port: int,
        fixed: tuple[int, Mapping[str, Any]] | None = None,
        *,
        text_calls: bool = False,
        answered_as: str | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.seen: list[tuple[str, str | None]] = []
        self.fixed = fixed
        self.text_calls = text_calls
        self.answered_as = answered_as


class _Handler(BaseHTTPRequestHandler):
    server_version = "loopback-model/1"
    server: _Server

    def do_POST(self) -> None:
        key = self.headers.get("authorization") or self.headers.get("x-api-key")
        self.server.seen.append((self.path, key))
        length = int(self.headers.get("content-length") or 0)
        if length > _MAX_BODY:
            self._send(413, {"error": {"message": "request too large"}})
            return
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw)
        except ValueError:
            self._send(400, {"error": {"message": "the body is not JSON"}})
            return
        if self.server.answered_as is not None:
            # The model a server answers as is its own: a name it ignores changes nothing.
            request["model"] = self.server.answered_as
        if self.server.fixed is not None:
            self._send(*self.server.fixed)
        elif self.path.endswith("/chat/completions"):
            self._send(200, _openai_reply(request, raw, text_calls=self.server.text_calls))
        elif self.path.endswith("/messages"):
            self._send(200, _anthropic_reply(request, raw))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _send(self, status: int, body: Mapping[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is the report."""


class StandIn:
    def __init__(self, server: _Server) -> None:
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"

    @property
    def seen(self) -> list[tuple[str, str | None]]:
        """``(path, credential header)`` of every request so far."""
        return list(self._server.seen)


@contextmanager
def serving(
    port: int = 0,
    *,
    fixed: tuple[int, Mapping[str, Any]] | None = None,
    text_calls: bool = False,
    answered_as: str | None = None,
) -> Iterator[StandIn]:
    """Serve on 127.0.0.1 in a thread; ``fixed`` (status, body) answers every request alike;
    ``text_calls`` writes every Chat Completions call as text (see the module's docstring);
    ``answered_as`` is the model every response names, whatever the request asked for."""
    server = _Server(port, fixed, text_calls=text_calls, answered_as=answered_as)
    # shutdown() waits for the loop's next poll: half a second a test at the default interval.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)  # fmt: skip
    thread.start()
    try:
        yield StandIn(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description="A scripted loopback model stand-in.")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument(
        "--text-calls", action="store_true", help="write every call as fenced JSON text"
    )
    arguments = parser.parse_args()
    server = _Server(arguments.port, text_calls=arguments.text_calls)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
