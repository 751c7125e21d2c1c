"""The floor of the service path for ``team_bench.py``: the HTTP hop alone.

The same processes post the same bodies (a snapshot's and a publication's of 1-3 upserts, or the
publication's alone) through ``RemoteBackend``'s own exchange (``store/service_http.py``) to the
same uvicorn and Starlette stack, which reads each body and answers the bytes the service
answered, with no token, no parsing, no screen and no store.
"""

from __future__ import annotations

import json
import random
import socket
import time
from pathlib import Path
from typing import Any

from team_race import race, ready_then_wait

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from factories import REPOSITORY, make_draft

__all__ = ["hop_floor", "hop_worker"]


def hop_worker(url: str, n: int, batches: int, out: str, publications_only: bool) -> None:
    """The service race's requests with none of the work: the floor of the service path (with
    ``publications_only``, the publication race's: no snapshot a batch)."""
    from urllib.parse import urlsplit

    from active_memory.store.remote import DEFAULT_MAX_RESPONSE_BYTES
    from active_memory.store.service_http import Http11
    from active_memory.store.wire import API_PREFIX, PublishBody, SnapshotBody

    rng = random.Random(n)
    asked = SnapshotBody(run_id=f"worker-{n}", repository=REPOSITORY).model_dump_json().encode()
    # RemoteBackend's own exchange, with its headers: the floor pays what the product pays.
    headers = {"authorization": "Bearer -", "accept": "application/json"}
    client = Http11(urlsplit(url), API_PREFIX, headers, timeout_s=60,
                    max_response_bytes=DEFAULT_MAX_RESPONSE_BYTES, context=None)  # fmt: skip
    try:
        client.send("GET", "/generation", None)  # connected before the race starts
        ready_then_wait(out)
        started = time.process_time()
        for batch in range(batches):
            if not publications_only:
                client.send("POST", "/snapshot", asked)
            mutations = tuple(
                Mutation(op="upsert", id=new_lesson_id(), expected_revision=1,
                         draft=make_draft(f"Batch {batch} of worker {n} edits lesson {k}"))
                for k in range(rng.randint(1, 3))
            )  # fmt: skip
            body = PublishBody(publication=Publication(run_id=f"hop-w{n}-b{batch}",
                                                       mutations=mutations))  # fmt: skip
            client.send("POST", "/publish", body.model_dump_json().encode("utf-8"))
    finally:
        client.close()
    cpu_s = time.process_time() - started
    Path(out).write_text(json.dumps({"ended": time.time(), "cpu_s": cpu_s, "results": []}))


def hop_floor(
    snapshot: bytes, receipt: bytes, processes: int, batches: int, *, owned: bool = False
) -> tuple[float, float, float]:
    """The race (``owned``: the publication race) through the service's HTTP stack answering
    fixed bytes (no work): its seconds, the CPU seconds of this process (the server) and of the
    writers."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from active_memory.daemon_threads import start_serving
    from active_memory.server.protocol import guarded_protocol

    def fixed(answer: bytes) -> Any:
        async def endpoint(request: Request) -> Response:
            await request.body()
            return Response(answer, media_type="application/json")

        return endpoint

    app = Starlette(routes=[Route("/v1/snapshot", fixed(snapshot), methods=["POST"]),
                            Route("/v1/publish", fixed(receipt), methods=["POST"]),
                            Route("/v1/generation", fixed(b'{"generation":1}'))])  # fmt: skip
    config = uvicorn.Config(app, http=guarded_protocol(10.0), ws="none", lifespan="off",
                            log_level="warning", access_log=False, server_header=False)  # fmt: skip
    bound = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    bound.bind(("127.0.0.1", 0))
    server = uvicorn.Server(config)
    thread = start_serving(server, bound, what="the fixed answerer")
    try:
        url = f"http://127.0.0.1:{bound.getsockname()[1]}"
        served = time.process_time()
        elapsed, _, writers_cpu, _ = race("hop", url, "", processes, batches, owned=owned)
        return elapsed, time.process_time() - served, writers_cpu
    finally:
        server.should_exit = True
        thread.join(10)
        bound.close()
