"""A publication or a snapshot that arrived whole (head and body in the protocol's buffer) is
checked and answered on one worker thread, with the same checks in the same order as one whose
body is still to come (``MemoryService._publish_whole``, ``_snapshot_whole``)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import IssuedToken, RunningService
from active_memory.server.fairness import RateSettings
from active_memory.server.limits import ServiceLimits
from active_memory.store.wire import PublishBody
from factories import make_draft

Issue = Callable[..., IssuedToken]


def _publication(run_id: str = "whole-run") -> bytes:
    mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
    return (
        PublishBody(publication=Publication(run_id=run_id, mutations=(mutation,)))
        .model_dump_json()
        .encode()
    )


def _sent_whole(
    running: RunningService, token: str | None, body: bytes, route: str = "publish"
) -> tuple[int, Any]:
    """POST /v1/``route`` with its head and body in one write; the status and the JSON answer."""
    parts = urlsplit(running.url)
    credential = f"Authorization: Bearer {token}\r\n" if token is not None else ""
    head = (
        f"POST /v1/{route} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{credential}\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head_end = answer.index(b"\r\n\r\n")
    return int(answer.split(b" ", 2)[1]), json.loads(answer[head_end + 4 :])


@pytest.fixture
def hops(running: RunningService, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of each call the service hands to a worker thread."""
    workers = running.service._workers
    seen: list[str] = []
    run = workers.run

    async def counted(call: Any, *args: Any) -> Any:
        seen.append(getattr(call, "__name__", repr(call)))
        return await run(call, *args)

    monkeypatch.setattr(workers, "run", counted)
    return seen


def test_a_publication_sent_whole_is_published_in_one_hop_to_a_worker_thread(
    running: RunningService, issue: Issue, hops: list[str]
) -> None:
    status, answer = _sent_whole(running, issue().token, _publication())
    assert status == 200, answer
    assert len(answer["revisions"]) == 1
    assert hops == ["publish"]  # the token, its rates, the parse, the screen and the write


@pytest.mark.parametrize("token", [None, "amt_0123456789abcdef_" + "A" * 43])
def test_a_publication_sent_whole_without_a_valid_token_is_refused_before_its_body_is_parsed(
    running: RunningService, token: str | None
) -> None:
    status, answer = _sent_whole(running, token, b"{not json at all")
    assert (status, answer["error"]) == (401, "unauthorized")


def test_a_publication_sent_whole_under_another_run_than_its_tokens_is_refused(
    running: RunningService, issue: Issue
) -> None:
    token = issue(run_id="bound-run").token
    status, answer = _sent_whole(running, token, _publication("other-run"))
    assert (status, answer["error"]) == (403, "out_of_scope")
    assert _sent_whole(running, token, _publication("bound-run"))[0] == 200


def test_a_publication_sent_whole_that_is_not_valid_is_a_bad_request(
    running: RunningService, issue: Issue
) -> None:
    status, answer = _sent_whole(running, issue().token, b'{"publication": 3}')
    assert (status, answer["error"]) == (400, "bad_request")


def test_a_publication_sent_whole_is_metered_like_any_request(
    running: RunningService, issue: Issue, monkeypatch: pytest.MonkeyPatch
) -> None:
    from active_memory.server.fairness import TokenRates

    service = running.service
    slow = TokenRates(RateSettings(requests_per_s=0.01, request_burst=1))
    monkeypatch.setattr(service, "rates", slow)
    monkeypatch.setattr(service.bodies, "rates", slow)
    token = issue().token
    assert _sent_whole(running, token, _publication())[0] == 200
    status, answer = _sent_whole(running, token, _publication())
    assert (status, answer["error"]) == (429, "rate_limited")


def test_a_publication_over_the_size_limit_sent_whole_is_refused(
    running: RunningService, issue: Issue, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = running.service
    small = ServiceLimits(max_request_bytes=200, request_timeout_s=1.5)
    monkeypatch.setattr(service.bodies, "limits", small)
    status, answer = _sent_whole(running, issue().token, _publication())
    assert (status, answer["error"]) == (413, "too_large")


def test_a_snapshot_sent_whole_is_answered_in_one_hop_to_a_worker_thread(
    running: RunningService, issue: Issue, hops: list[str]
) -> None:
    token = issue().token
    assert _sent_whole(running, token, _publication())[0] == 200
    hops.clear()
    status, answer = _sent_whole(running, token, b'{"run_id": "whole-run"}', route="snapshot")
    assert status == 200, answer
    assert len(answer["rows"]) == 1
    assert hops == ["snapshot"]  # the token, its rates, the parse and the read


@pytest.mark.parametrize(
    ("token", "body", "status", "code"),
    [
        (None, b"{not json", 401, "unauthorized"),
        ("amt_0123456789abcdef_" + "A" * 43, b"{not json", 401, "unauthorized"),
        ("issued", b'{"run_id": 3}', 400, "bad_request"),
    ],
)
def test_a_snapshot_sent_whole_is_refused_as_one_sent_in_pieces(
    running: RunningService, issue: Issue, token: str | None, body: bytes, status: int, code: str
) -> None:
    presented = issue().token if token == "issued" else token
    answered, answer = _sent_whole(running, presented, body, route="snapshot")
    assert (answered, answer["error"]) == (status, code)


@pytest.mark.parametrize("declared", ["3", "0"])
def test_a_body_framed_by_transfer_encoding_with_a_content_length_too_is_refused(
    running: RunningService, issue: Issue, monkeypatch: pytest.MonkeyPatch, declared: str
) -> None:
    # h11 reads such a body by its chunks: charged by the Content-Length it also names (3
    # bytes, or none), a token sent any body within the size limit past its byte rate.
    from active_memory.server.fairness import TokenRates

    service = running.service
    tight = TokenRates(RateSettings(bytes_per_s=1, byte_burst=100))
    monkeypatch.setattr(service, "rates", tight)
    monkeypatch.setattr(service.bodies, "rates", tight)
    body = _publication()
    parts = urlsplit(running.url)
    head = (
        f"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
        f"Authorization: Bearer {issue().token}\r\n\r\n"
    ).encode()
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(head + chunked)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    assert status == 400, answer[:300]
