"""Fairness between the tokens of a tenant: refusals before the writers' lock, a bounded hold of
that lock, a write stopped when its client goes, per-token rates, and run-bound tokens.

The writers' lock is the tenant's ``meta`` row (``store/postgres/session.py``): a test holds it
from a connection of its own, or makes a write slow with a trigger that sleeps, then watches
whether the service waited, stopped, or let the lock go.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from active_memory.errors import ScopeRefused
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.server import RunningService, ServiceLimits, build_service
from active_memory.server.fairness import RateSettings
from active_memory.store.postgres.schema import tenant_schema
from active_memory.store.remote import RemoteBackend
from active_memory.store.results import StoreLimits
from factories import REPOSITORY, make_draft

NO_RATES = RateSettings(requests_per_s=None, bytes_per_s=None)
LIMITS = ServiceLimits(
    max_request_bytes=1024 * 1024, request_timeout_s=5.0, max_publication_mutations=50,
    write_hold_s=30.0, rates=NO_RATES,
)  # fmt: skip
_tenants = itertools.count(1)


@contextmanager
def _serving(
    pg_database: str, limits: ServiceLimits = LIMITS, store_limits: StoreLimits | None = None
) -> Iterator[RunningService]:
    extra: dict[str, Any] = {} if store_limits is None else {"store_limits": store_limits}
    service = build_service(pg_database, pool_size=4, limits=limits, **extra)
    try:
        with RunningService(service) as running:
            yield running
    finally:
        service.close()


def _token(running: RunningService, **options: Any) -> tuple[str, str]:
    tenant = f"fair{next(_tenants)}"
    issued = running.service.credentials.create(tenant=tenant, repository=REPOSITORY, **options)
    running.service.store(tenant)  # its schema exists before a test touches it
    return tenant, issued.token


def _creations(count: int, run_id: str = "run") -> dict[str, Any]:
    mutations = tuple(
        Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=make_draft())
        for _ in range(count)
    )
    publication = Publication(run_id=run_id, mutations=mutations)
    return {"publication": publication.model_dump(mode="json")}


def _publish(running: RunningService, token: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{running.url}/v1/publish",
        content=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
        timeout=60,
    )


@contextmanager
def _writers_lock(pg_database: str, tenant: str) -> Iterator[None]:
    """Hold the tenant's writers' lock from another connection."""
    with psycopg.connect(pg_database) as conn:
        conn.execute(f'SELECT generation FROM "{tenant_schema(tenant)}".meta FOR UPDATE')
        yield
        conn.rollback()


def _lock_is_free(pg_database: str, tenant: str) -> bool:
    with psycopg.connect(pg_database) as conn:
        try:
            conn.execute(f'SELECT 1 FROM "{tenant_schema(tenant)}".meta FOR UPDATE NOWAIT')
        except psycopg.errors.LockNotAvailable:
            return False
        conn.rollback()
        return True


def _slow_writes(pg_database: str, tenant: str, seconds: float, event: str = "INSERT") -> None:
    """Every row a write adds to (``event``: or changes in) the tenant's records sleeps
    ``seconds`` first."""
    schema = tenant_schema(tenant)
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(
            f'CREATE FUNCTION "{schema}".slow() RETURNS trigger LANGUAGE plpgsql AS '
            f"$$ BEGIN PERFORM pg_sleep({seconds}); RETURN NEW; END $$"
        )
        conn.execute(
            f'CREATE TRIGGER slow BEFORE {event} ON "{schema}".records '
            f'FOR EACH ROW EXECUTE FUNCTION "{schema}".slow()'
        )


def _asleep_in_trigger(pg_database: str) -> bool:
    """Whether a write is asleep in the ``_slow_writes`` trigger (the cluster is this session's
    own, so no other test's sleep is counted)."""
    with psycopg.connect(pg_database) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
        ).fetchone()
    return bool(row and row[0])


def _generation(running: RunningService, tenant: str) -> int:
    return running.service.store(tenant).generation()


def _refusal(answer: httpx.Response, status: int, code: str) -> str:
    assert answer.status_code == status, answer.text
    data = answer.json()
    assert data["error"] == code
    return str(data["message"])


# -- refused before the lock ----------------------------------------------------------------


def test_a_publication_over_the_mutation_cap_is_refused_without_waiting_for_the_lock(
    pg_database: str,
) -> None:
    with _serving(pg_database) as running:
        tenant, token = _token(running)
        with _writers_lock(pg_database, tenant):
            started = time.monotonic()
            answer = _publish(running, token, _creations(51))
            waited = time.monotonic() - started
        message = _refusal(answer, 413, "too_large")
        assert "51 mutations" in message
        assert "at most 50" in message
        assert waited < 2.0  # the lock was held throughout; the lock timeout is 5 s
        assert _generation(running, tenant) == 0


def test_a_body_over_the_mutation_cap_is_refused_before_it_is_validated(
    pg_database: str,
) -> None:
    with _serving(pg_database) as running:
        _, token = _token(running)
        body = _creations(200)
        body["publication"]["mutations"][-1]["op"] = "not an op"  # the models would say 400
        message = _refusal(_publish(running, token, body), 413, "too_large")
        assert "200 mutations" in message


def test_keys_spelt_with_escapes_are_counted_once_validated(pg_database: str) -> None:
    with _serving(pg_database) as running:
        tenant, token = _token(running)
        raw = json.dumps(_creations(51)).replace('"expected_revision"', '"expected\\u005frevision"')
        answer = httpx.post(f"{running.url}/v1/publish", content=raw.encode(),
                            headers={"authorization": f"Bearer {token}"})  # fmt: skip
        assert "51 mutations" in _refusal(answer, 413, "too_large")
        assert _generation(running, tenant) == 0


def test_a_publication_past_the_stores_capacity_is_refused_without_waiting_for_the_lock(
    pg_database: str,
) -> None:
    with _serving(pg_database, store_limits=StoreLimits(max_live=5)) as running:
        tenant, token = _token(running)
        assert _publish(running, token, _creations(4)).status_code == 200
        with _writers_lock(pg_database, tenant):
            started = time.monotonic()
            answer = _publish(running, token, _creations(2))
            waited = time.monotonic() - started
        message = _refusal(answer, 422, "refused")
        assert "capacity limit reached" in message
        assert "6 live lessons" in message
        assert waited < 2.0
        unparsed = _creations(2)
        unparsed["publication"]["run_id"] = ["not", "a", "run id"]  # the models would say 400
        assert "capacity limit" in _refusal(_publish(running, token, unparsed), 422, "refused")
        assert _publish(running, token, _creations(1)).status_code == 200  # room for one


# -- the lock: a bounded hold, released when the client goes ---------------------------------


def test_a_write_holding_the_lock_past_its_bound_is_stopped_and_the_lock_released(
    pg_database: str,
) -> None:
    limits = replace(LIMITS, write_hold_s=0.5)
    with _serving(pg_database, limits) as running:
        tenant, token = _token(running)
        _slow_writes(pg_database, tenant, 20)
        started = time.monotonic()
        answer = _publish(running, token, _creations(1))
        took = time.monotonic() - started
        message = _refusal(answer, 503, "unavailable")
        assert "held the writers' lock for 0.5 s" in message
        assert "nothing was committed" in message
        assert int(answer.headers["retry-after"]) >= 1
        assert took < 5.0
        assert _lock_is_free(pg_database, tenant)
        assert _generation(running, tenant) == 0


def _prepared_admin_write(
    running: RunningService, tenant: str, operation: str
) -> tuple[str, dict[str, Any], str]:
    """A lesson of ``tenant`` ready for ``operation`` (revert, purge or import), the route's
    body, and the trigger event its write passes through."""
    store = running.service.store(tenant)
    lesson_id = new_lesson_id()
    first = Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=make_draft())
    store.publish(Publication(run_id="setup", mutations=(first,)))
    if operation == "revert":
        second = Mutation(op="upsert", id=lesson_id, expected_revision=1,
                          draft=make_draft("Keep the schema check first"))  # fmt: skip
        store.publish(Publication(run_id="setup", mutations=(second,)))
        return "revert", {"id": lesson_id, "to_revision": 1, "run_id": "admin"}, "UPDATE"
    if operation == "purge":
        retire = Mutation(op="retire", id=lesson_id, expected_revision=1)
        store.publish(Publication(run_id="setup", mutations=(retire,)))
        return "purge", {"id": lesson_id, "run_id": "admin"}, "UPDATE"
    # The lines of another tenant's lesson: new rows here.
    scratch = f"scratch{next(_tenants)}"
    running.service.store(scratch).import_lines(store.export())
    lines = list(running.service.store(scratch).export())
    fresh = [line.replace(lesson_id, new_lesson_id()) for line in lines]
    return "import", {"lines": fresh, "run_id": "import"}, "INSERT"


@pytest.mark.parametrize("operation", ["revert", "purge", "import"])
def test_an_admin_write_holding_the_lock_past_its_bound_is_stopped_and_the_lock_released(
    pg_database: str, operation: str
) -> None:
    limits = replace(LIMITS, write_hold_s=0.5)
    with _serving(pg_database, limits) as running:
        tenant, token = _token(running)
        route, body, event = _prepared_admin_write(running, tenant, operation)
        generation = _generation(running, tenant)
        _slow_writes(pg_database, tenant, 20, event)
        started = time.monotonic()
        answer = httpx.post(
            f"{running.url}/v1/{route}",
            json=body,
            headers={"authorization": f"Bearer {token}"},
            timeout=60,
        )
        took = time.monotonic() - started
        message = _refusal(answer, 503, "unavailable")
        assert "held the writers' lock for 0.5 s" in message
        assert "nothing was committed" in message
        assert took < 5.0
        assert _lock_is_free(pg_database, tenant)
        assert _generation(running, tenant) == generation


def test_a_write_stops_and_releases_the_lock_when_its_client_goes_away(
    pg_database: str,
) -> None:
    with _serving(pg_database) as running:
        tenant, token = _token(running)
        _slow_writes(pg_database, tenant, 20)
        body = json.dumps(_creations(1)).encode()
        parts = urlsplit(running.url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
            sock.sendall(
                b"POST /v1/publish HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            deadline = time.monotonic() + 10.0
            while not _asleep_in_trigger(pg_database):  # the write is under way, asleep in it
                assert time.monotonic() < deadline, "the write never reached its trigger"
                time.sleep(0.02)
            assert not _lock_is_free(pg_database, tenant)
        deadline = time.monotonic() + 5.0
        while not _lock_is_free(pg_database, tenant):
            assert time.monotonic() < deadline, "the lock stayed held after the client left"
            time.sleep(0.1)
        assert _generation(running, tenant) == 0


# -- per-token rates ---------------------------------------------------------------------------


def test_a_token_over_its_request_rate_is_answered_429_and_other_tokens_are_not(
    pg_database: str,
) -> None:
    limits = replace(LIMITS, rates=RateSettings(requests_per_s=0.2, request_burst=2,
                                                bytes_per_s=None))  # fmt: skip
    with _serving(pg_database, limits) as running:
        _, busy = _token(running)
        _, quiet = _token(running)
        headers = {"authorization": f"Bearer {busy}"}
        answers = [httpx.get(f"{running.url}/v1/generation", headers=headers) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]
        message = _refusal(answers[2], 429, "rate_limited")
        assert "request or byte rate" in message
        assert 1 <= int(answers[2].headers["retry-after"]) <= 5
        quiet_headers = {"authorization": f"Bearer {quiet}"}
        assert httpx.get(f"{running.url}/v1/generation", headers=quiet_headers).status_code == 200


def test_a_token_over_its_byte_rate_is_answered_429_before_its_body_is_read(
    pg_database: str,
) -> None:
    rates = RateSettings(requests_per_s=None, bytes_per_s=1024, byte_burst=1024 * 1024)
    with _serving(pg_database, replace(LIMITS, rates=rates)) as running:
        _, token = _token(running)
        big = b'{"run_id":"run"}' + b" " * (700 * 1024)
        headers = {"authorization": f"Bearer {token}"}
        first = httpx.post(f"{running.url}/v1/snapshot", content=big, headers=headers)
        second = httpx.post(f"{running.url}/v1/snapshot", content=big, headers=headers)
        assert first.status_code == 200
        _refusal(second, 429, "rate_limited")
        assert int(second.headers["retry-after"]) > 60  # 700 KiB at 1 KiB/s


# -- run-bound tokens --------------------------------------------------------------------------


def test_a_run_bound_token_publishes_only_under_its_run_id(pg_database: str) -> None:
    with _serving(pg_database) as running:
        tenant, token = _token(running, run_id="ci-4711")
        other = _publish(running, token, _creations(1, run_id="ci-4712"))
        message = _refusal(other, 403, "out_of_scope")
        assert "bound to run 'ci-4711'" in message
        assert "'ci-4712'" in message
        assert _generation(running, tenant) == 0
        assert _publish(running, token, _creations(1, run_id="ci-4711")).status_code == 200
        with RemoteBackend(running.url, token=token) as backend:
            lesson_id = next(iter(backend.list_lessons())).id
            with pytest.raises(ScopeRefused, match="ci-4711"):
                backend.revert(lesson_id, 1, run_id="someone-else")


def test_a_token_without_a_run_binding_publishes_under_any_run_id(pg_database: str) -> None:
    with _serving(pg_database) as running:
        _, token = _token(running)
        for run_id in ("first", "second"):
            assert _publish(running, token, _creations(1, run_id=run_id)).status_code == 200


# -- many tokens at once: the lock is shared fairly ------------------------------------------


def test_over_capacity_batches_from_one_token_do_not_stall_anothers_publications(
    pg_database: str,
) -> None:
    with _serving(pg_database, store_limits=StoreLimits(max_live=20)) as running:
        tenant, attacker = _token(running)
        legit = running.service.credentials.create(tenant=tenant, repository=REPOSITORY).token
        assert _publish(running, attacker, _creations(19)).status_code == 200
        stop = threading.Event()
        refused: list[int] = []

        def attack() -> None:
            while not stop.is_set():
                refused.append(_publish(running, attacker, _creations(40)).status_code)

        thread = threading.Thread(target=attack)
        thread.start()
        try:
            answers = [_publish(running, legit, _existing_upsert(running, tenant))
                       for _ in range(5)]  # fmt: skip
        finally:
            stop.set()
            thread.join(30)
        assert [a.status_code for a in answers] == [200] * 5
        assert refused
        assert set(refused) == {422}


def _existing_upsert(running: RunningService, tenant: str) -> dict[str, Any]:
    lesson = running.service.store(tenant).list_lessons()[0]
    mutation = Mutation(op="upsert", id=lesson.id, expected_revision=lesson.revision,
                        draft=make_draft("Keep the schema check first"))  # fmt: skip
    return {"publication": Publication(run_id="legit", mutations=(mutation,)).model_dump(
        mode="json")}  # fmt: skip
