"""The guarded protocol on its own, fed bytes through a recording transport: what llhttp refuses,
pipelined requests and refusals that must wait for the answers owed ahead of them.

The end-to-end guards (deadlines, caps, the head bound, lingering) are tested against a running
service in ``test_abuse.py``; these cases need a request held unanswered at a chosen moment."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from active_memory.server.protocol import MAX_PIPELINED, REQUEST_ARRIVED, guarded_protocol


class _Transport(asyncio.Transport):
    """What the protocol writes, and whether it closed or ended its side."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = self.ended = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.9", 5000), "sockname": ("127.0.0.1", 80)}.get(name)

    def write(self, data: Any) -> None:
        assert not self.ended, "written after the end of the stream"
        self.written += data

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.ended = True

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def answers(self) -> list[tuple[int, Any]]:
        """Each answer's status and JSON body, in the order written."""
        found, rest = [], bytes(self.written)
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in lines
                if line.lower().startswith(b"content-length")
            )
            found.append((int(lines[0].split(b" ")[1]), json.loads(rest[:length])))
            rest = rest[length:]
        return found


class _App:
    """Answers each request with what it was told of its arrival; ``/held`` waits for
    ``release`` first."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.called: list[str] = []  # the paths the application was called for
        self.told_gone: list[str] = []  # the ``/watch`` requests told the client left

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        arrived = scope["extensions"][REQUEST_ARRIVED]()
        if scope["path"] == "/early":  # answered before its body is read, as a 404 is
            self.called.append(scope["path"])
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"2")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b"{}"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.called.append(scope["path"])
        if scope["path"] == "/held":
            await self.release.wait()
        if scope["path"] == "/watch":  # as the service watches a publication's client
            if (await receive())["type"] == "http.disconnect":
                self.told_gone.append(scope["path"])
            return
        names = sorted(name.decode() for name, _ in scope["headers"])
        answer = json.dumps(
            {"path": scope["path"], "arrived": arrived, "body": len(body), "headers": names}
        )
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(answer)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": answer.encode()})


def _connected(app: _App, timeout: float = 5.0) -> tuple[asyncio.Protocol, _Transport]:
    protocol_class = guarded_protocol(timeout, max_head_bytes=1024)
    config = uvicorn.Config(app, http=protocol_class, lifespan="off", log_level="warning")
    config.load()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    transport = _Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def _settled() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def _post(path: str, body: bytes = b"{}", extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


async def test_a_request_llhttp_refuses_is_answered_in_json_with_its_reason() -> None:
    protocol, transport = _connected(_App())
    head = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
    protocol.data_received(head + b"3\r\nabc\r\n")  # the rest yet to come
    ((status, answer),) = transport.answers()
    assert (status, answer["error"]) == (400, "bad_request")
    assert "Transfer-Encoding can't be present with Content-Length" in answer["message"]
    assert transport.ended  # lingering: the client's rest is read before the close
    assert not transport.closed


async def test_pipelined_requests_are_answered_in_order_each_told_it_arrived_whole() -> None:
    protocol, transport = _connected(_App())
    protocol.data_received(_post("/one", b"{}") + _post("/two", b"[1]") + _post("/three")[:-2])
    await _settled()
    protocol.data_received(b"{}")
    await _settled()
    answers = [answer for _, answer in transport.answers()]
    assert [answer["path"] for answer in answers] == ["/one", "/two", "/three"]
    assert [answer["arrived"] for answer in answers] == [True, True, False]
    assert [answer["body"] for answer in answers] == [2, 3, 2]


async def test_a_head_too_large_behind_a_request_being_answered_is_refused_after_its_answer() -> (
    None
):
    app = _App()
    protocol, transport = _connected(app)
    protocol.data_received(_post("/held") + b"POST /next HTTP/1.1\r\nX-Pad: ")
    await _settled()
    protocol.data_received(b"a" * 2000)  # over the 1 KiB bound while /held is unanswered
    await _settled()
    assert transport.written == b""  # a refusal now would land inside the answer owed
    app.release.set()
    await _settled()
    (held, _), (refused, answer) = transport.answers()
    assert (held, refused, answer["error"]) == (200, 431, "too_large")
    assert transport.ended


async def test_a_body_llhttp_refuses_behind_a_request_being_answered_waits_for_that_answer() -> (
    None
):
    app = _App()
    protocol, transport = _connected(app)
    chunked = b"POST /next HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    protocol.data_received(_post("/held") + chunked + b"zz\r\n")  # not a chunk size
    await _settled()
    assert transport.written == b""
    app.release.set()
    await _settled()
    (held, answer), (refused, refusal) = transport.answers()
    assert (held, answer["path"], refused, refusal["error"]) == (200, "/held", 400, "bad_request")


def _chunked(path: str, trailer: bytes = b"") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    return head.encode() + b"1\r\na\r\n0\r\n" + trailer


async def test_trailers_are_dropped_and_many_small_chunks_are_read() -> None:
    protocol, transport = _connected(_App())
    protocol.data_received(_chunked("/one", b"Authorization: Bearer x\r\n\r\n"))
    head = b"POST /two HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    protocol.data_received(head)
    for _ in range(30):  # 3,000 one-byte chunks, 15 KB of framing: 24 bytes a chunk allowed
        protocol.data_received(b"1\r\na\r\n" * 100)
    protocol.data_received(b"0\r\n\r\n")
    await _settled()
    first, second = [answer for _, answer in transport.answers()]
    assert first["headers"] == ["host", "transfer-encoding"]  # no trailer among them
    assert (second["path"], second["body"]) == ("/two", 3000)


async def test_a_trailer_over_the_head_bound_sent_in_pieces_is_refused() -> None:
    protocol, transport = _connected(_App())
    protocol.data_received(_chunked("/one", b"X-Pad: "))
    for _ in range(3):
        protocol.data_received(b"a" * 600)  # 1,800 bytes past a bound of 1 KiB
    await _settled()
    ((status, answer),) = transport.answers()
    assert (status, answer["error"]) == (431, "too_large")
    assert "trailers" in answer["message"]
    assert transport.ended


async def test_requests_pipelined_past_the_cap_are_refused_after_the_answers_owed() -> None:
    app = _App()
    protocol, transport = _connected(app)
    queued = b"".join(_post(f"/q{n}") for n in range(MAX_PIPELINED + 3))
    protocol.data_received(_post("/held") + queued)
    await _settled()
    assert transport.written == b""
    app.release.set()
    for _ in range(MAX_PIPELINED + 2):
        await _settled()
    answers = transport.answers()
    paths = [answer.get("path") for _, answer in answers]
    assert paths == ["/held"] + [f"/q{n}" for n in range(MAX_PIPELINED)] + [None]
    assert (answers[-1][0], answers[-1][1]["error"]) == (503, "unavailable")
    assert transport.ended


async def test_a_request_offering_an_upgrade_is_refused_and_its_body_never_parsed() -> None:
    app = _App()
    protocol, transport = _connected(app)
    smuggled = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
    head = _post("/two", smuggled, "Connection: keep-alive, Upgrade\r\nUpgrade: h2c\r\n")
    protocol.data_received(head.replace(smuggled, b""))
    protocol.data_received(smuggled)  # its body, a request if parsed as one
    await _settled()
    ((status, answer),) = transport.answers()
    assert (status, answer["error"]) == (400, "bad_request")
    assert "Upgrade" in answer["message"]
    assert app.called == []
    assert transport.ended


async def test_an_upgrade_offered_behind_a_request_being_answered_is_refused_after_it() -> None:
    app = _App()
    protocol, transport = _connected(app)
    upgrade = b"GET /u HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
    protocol.data_received(_post("/held") + upgrade + b"GET /smuggled HTTP/1.1\r\n\r\n")
    await _settled()
    assert transport.written == b""
    app.release.set()
    await _settled()
    (held, _), (refused, answer) = transport.answers()
    assert (held, refused, answer["error"]) == (200, 400, "bad_request")
    assert app.called == ["/held"]


async def test_the_request_running_learns_the_client_left_with_one_queued_behind_it() -> None:
    app = _App()
    protocol, transport = _connected(app)
    protocol.data_received(_post("/watch") + _post("/next"))
    await _settled()
    protocol.connection_lost(None)
    await _settled()
    assert app.told_gone == ["/watch"]
    assert transport.written == b""


async def test_the_deadline_of_a_request_queued_behind_another_runs_from_its_answer() -> None:
    app = _App()
    protocol, transport = _connected(app, timeout=0.2)
    arriving = _post("/three", b"{}")[:-1]  # a byte of its body yet to come
    protocol.data_received(_post("/one") + _post("/held") + arriving)
    await asyncio.sleep(0.4)  # past the deadline while /held is owed its answer
    assert [status for status, _ in transport.answers()] == [200]
    app.release.set()
    await _settled()
    assert [answer["path"] for _, answer in transport.answers()] == ["/one", "/held"]
    await asyncio.sleep(0.3)
    (_, one), (_, held), (status, answer) = transport.answers()
    assert (one["path"], held["path"], status, answer["error"]) == ("/one", "/held", 408, "timeout")


async def test_an_answer_sent_before_its_body_came_leaves_the_next_request_a_deadline() -> None:
    app = _App()
    protocol, transport = _connected(app, timeout=0.2)
    request = _post("/early", b"0123456789")
    protocol.data_received(request[:-8])  # its head and two bytes of its body
    await _settled()
    assert [status for status, _ in transport.answers()] == [200]
    protocol.data_received(request[-8:])  # the rest of its body; then no next request comes
    await asyncio.sleep(0.1)
    assert not transport.closed
    await asyncio.sleep(0.3)  # past the deadline counted from the answer
    assert transport.closed
