"""Legitimate latency while the service is abused, for ``team_bench.py``.

A legitimate host's snapshots are timed alone, then while 40 clients send a byte a second, two
loops send wrong tokens and two loops send 9 MiB bodies.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from active_memory.store.backend import RunIdentity, SnapshotRequest
from factories import REPOSITORY

__all__ = ["abuse"]


def _slow(url: str, stop: threading.Event) -> None:
    parts = urlsplit(url)
    while not stop.is_set():
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
                sock.sendall(b"POST /v1/snapshot HTTP/1.1\r\nHost: x\r\n")
                while not stop.is_set():
                    sock.sendall(b"a")
                    time.sleep(1.0)
        except OSError:
            continue  # cut off: come back


def _latencies(backend: Any, count: int) -> list[float]:
    request = SnapshotRequest(RunIdentity("bench", REPOSITORY))
    out = []
    for _ in range(count):
        started = time.perf_counter()
        backend.snapshot(request)
        out.append(time.perf_counter() - started)
        time.sleep(0.02)
    return out


def _shown(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"median {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"max {ordered[-1] * 1000:.1f} ms")  # fmt: skip


def abuse(url: str, token: str) -> None:
    import httpx

    from active_memory.store.remote import RemoteBackend

    stop = threading.Event()
    refused: list[int] = []

    def bad(body: bytes, header: str) -> None:
        with httpx.Client() as client:
            while not stop.is_set():
                try:
                    answer = client.post(
                        f"{url}/v1/snapshot", content=body, headers={"authorization": header}
                    )
                except httpx.HTTPError:
                    refused.append(0)  # cut off mid-upload, before the refusal could be read
                    continue
                refused.append(answer.status_code)

    with RemoteBackend(url, token=token) as backend:
        alone = _latencies(backend, 200)
        crowd = [threading.Thread(target=_slow, args=(url, stop)) for _ in range(40)]
        wrong = "Bearer amt_0000000000000000_" + "x" * 43
        huge = b" " * (9 * 1024 * 1024)
        crowd += [threading.Thread(target=bad, args=(b"{}", wrong)) for _ in range(2)]
        crowd += [threading.Thread(target=bad, args=(huge, f"Bearer {token}")) for _ in range(2)]
        for thread in crowd:
            thread.start()
        time.sleep(1.0)
        abused = _latencies(backend, 200)
        stop.set()
        for thread in crowd:
            thread.join(15)
    counts = {code: refused.count(code) for code in sorted(set(refused))}
    print(f"legitimate snapshot, alone: {_shown(alone)}")
    print(f"legitimate snapshot, during abuse (40 slow clients, wrong tokens, 9 MiB bodies): "
          f"{_shown(abused)}; abusive requests answered by status {counts} (0: connection cut "
          "mid-upload)")  # fmt: skip
