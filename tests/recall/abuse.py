"""Hostile local clients of a recall broker, and a legitimate one, for the abuse test and its
benchmark (``benchmarks/broker_abuse_bench.py``).

The swarm runs as a script (standard library only, in its own process, so it competes with the
broker for the machine and not for the test's interpreter lock)::

    python hostile.py HOST PORT --each 200 --seconds 10

It keeps ``--each`` sockets of each kind open against the broker, reconnecting whenever the
broker drops one, until ``--seconds`` pass or stdin closes:

* ``idle``: connects and sends nothing;
* ``slow``: sends a request one byte every 50 ms (half an HTTP head, half a helper frame);
* ``wrong``: sends whole requests with a wrong token every 0.5 s on a keep-alive connection
  (half HTTP with a wrong bearer token, half helper frames signed with a wrong key).

Prints ``ready`` once every socket connected the first time, and at the end one JSON line of
counts (connections made, dropped by the broker, answers to wrong tokens).

:func:`legitimate_call` is one hook call as the helper makes it (a signed frame, the answer's
tag checked, 250 ms for all of it) or as a ``curl`` hook does (HTTP, ``--max-time 0.25``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import secrets
import socket
import sys
import time

WRONG_HTTP = (
    b"POST /hook/claude HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong-token\r\n"
    b"Connection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"
)


def wrong_frame() -> bytes:
    body = json.dumps({"nonce": secrets.token_hex(16), "harness": "claude", "payload": {}})
    data = hmac.new(b"wrong-key", body.encode(), hashlib.sha256).digest() + body.encode()
    return len(data).to_bytes(4, "big") + data


class Swarm:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.counts = {"connections": 0, "dropped": 0, "answered": 0, "failed_connects": 0}
        self.stop = asyncio.Event()
        self.connected = 0

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        try:
            pair = await asyncio.open_connection(self.host, self.port)
        except OSError:
            self.counts["failed_connects"] += 1
            await asyncio.sleep(0.05)
            return None
        self.counts["connections"] += 1
        return pair

    async def _run(self, kind: str, number: int) -> None:
        first = True
        while not self.stop.is_set():
            pair = await self._connect()
            if pair is None:
                continue
            if first:
                self.connected += 1
                first = False
            reader, writer = pair
            try:
                await getattr(self, kind)(reader, writer, number)
            except (OSError, asyncio.IncompleteReadError):
                pass
            finally:
                self.counts["dropped"] += 1
                writer.close()

    async def idle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: int
    ) -> None:
        while not self.stop.is_set():
            if not await reader.read(65536):
                return

    async def slow(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
    ) -> None:
        data = WRONG_HTTP if n % 2 else wrong_frame()
        for position in range(len(data)):
            if self.stop.is_set() or reader.at_eof():
                return
            writer.write(data[position : position + 1])
            await writer.drain()
            await asyncio.sleep(0.05)
        await reader.read(65536)

    async def wrong(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int
    ) -> None:
        loop = asyncio.get_running_loop()
        while not self.stop.is_set():
            started = loop.time()
            writer.write(WRONG_HTTP if n % 2 else wrong_frame())
            await writer.drain()
            answer = await reader.read(65536)
            if answer:
                self.counts["answered"] += 1
            # Every 0.5 s, on this connection while the broker keeps it, else on a new one.
            await asyncio.sleep(max(0.0, started + 0.5 - loop.time()))
            if not answer or reader.at_eof():
                return

    async def main(self, each: int, seconds: float) -> None:
        tasks = [asyncio.create_task(self._run(kind, number))
                 for number in range(each) for kind in ("idle", "slow", "wrong")]  # fmt: skip
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self.connected < len(tasks) and loop.time() < deadline:
            await asyncio.sleep(0.01)
        print("ready", flush=True)
        watch = loop.run_in_executor(None, sys.stdin.read)  # stdin closing ends the swarm
        await asyncio.wait([watch], timeout=max(0.0, deadline - loop.time()))
        self.stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        print(json.dumps(self.counts), flush=True)
        os._exit(0)  # the stdin reader thread may still be blocked: do not wait for it


REQUEST_CONTEXT = b"active-memory request 2\n"
ANSWER_CONTEXT = b"active-memory answer 2\n"
BUDGET_S = 0.25


def _receive(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _frame_call(sock: socket.socket, token: str, payload: object, deadline: float) -> bool:
    nonce = secrets.token_hex(16)
    body = json.dumps({"nonce": nonce, "harness": "claude", "payload": payload}).encode()
    key = token.encode()
    data = hmac.new(key, REQUEST_CONTEXT + body, hashlib.sha256).digest() + body
    sock.sendall(len(data).to_bytes(4, "big") + data)
    signed = _receive(sock, int.from_bytes(_receive(sock, 4, deadline), "big"), deadline)
    tag, answer = signed[:32], signed[32:]
    expected = hmac.new(key, ANSWER_CONTEXT + nonce.encode() + answer, hashlib.sha256).digest()
    if not hmac.compare_digest(tag, expected) or not answer.startswith(b"{"):
        return False
    ack = b'{"ack":true}'
    sock.sendall(len(ack).to_bytes(4, "big") + ack)
    return True


def _http_call(sock: socket.socket, token: str, payload: object, deadline: float) -> bool:
    body = json.dumps(payload).encode()
    head = (f"POST /hook/claude HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}"
            f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")  # fmt: skip
    sock.sendall(head.encode() + body)
    reply = b""
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        reply += chunk
    return reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"}")


def legitimate_call(
    host: str,
    port: int,
    token: str,
    payload: object,
    *,
    http: bool = False,
    budget_s: float = BUDGET_S,
) -> float | None:
    """Seconds one hook call took to be answered, or None when it was not within ``budget_s``
    (250 ms, the helper's whole call; 150 ms is its share of the broker with a store fallback)."""
    started = time.monotonic()
    deadline = started + budget_s
    try:
        with socket.create_connection((host, port), timeout=budget_s) as sock:
            call = _http_call if http else _frame_call
            if not call(sock, token, payload, deadline):
                return None
    except (OSError, EOFError):
        return None
    elapsed = time.monotonic() - started
    return elapsed if elapsed <= budget_s else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--each", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--nice", type=int, default=0, help="lower this process's priority")
    args = parser.parse_args()
    if args.nice and hasattr(os, "nice"):
        os.nice(args.nice)
    asyncio.run(Swarm(args.host, args.port).main(args.each, args.seconds))


if __name__ == "__main__":
    main()
