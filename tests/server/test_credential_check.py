"""The token check every request makes: one prepared statement on the pool's connections,
refusing what it refused before (unknown, wrong secret, revoked, expired)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from active_memory.errors import StoreError
from active_memory.server.credentials import CredentialStore
from active_memory.store.postgres.session import PREPARED_SETTING, open_pool
from factories import REPOSITORY


def _prepared_texts(credentials: CredentialStore) -> list[str]:
    with credentials._pool.connection() as conn:  # the pool's one connection
        rows = conn.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    return [str(row[0]) for row in rows]


def test_a_token_check_is_prepared_once_then_reused(pg_database: str) -> None:
    pool = open_pool(pg_database, max_size=1)
    try:
        credentials = CredentialStore(pool)
        token = credentials.create(tenant="prepared", repository=REPOSITORY).token
        for _ in range(6):  # psycopg prepares a text on its fifth run
            assert credentials.authenticate(token) is not None
        checks = [text for text in _prepared_texts(credentials) if "secret_sha256" in text]
        assert len(checks) == 1
        assert "$1" in checks[0]  # the token's id is a parameter, never part of the text
    finally:
        pool.close()


def test_a_token_check_prepares_nothing_when_prepared_statements_are_off(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PREPARED_SETTING, "off")  # a pooler that cannot keep them
    pool = open_pool(pg_database, max_size=1)
    try:
        credentials = CredentialStore(pool)
        token = credentials.create(tenant="unprepared", repository=REPOSITORY).token
        for _ in range(6):
            assert credentials.authenticate(token) is not None
        assert _prepared_texts(credentials) == []
    finally:
        pool.close()


def test_a_prepared_token_check_still_refuses_a_revoked_or_expired_token(
    pg_database: str,
) -> None:
    pool = open_pool(pg_database, max_size=1)
    try:
        credentials = CredentialStore(pool)
        issued = credentials.create(tenant="refused", repository=REPOSITORY)
        brief = credentials.create(
            tenant="refused", repository=REPOSITORY, expires_in=timedelta(seconds=1)
        )
        for _ in range(6):
            assert credentials.authenticate(issued.token) is not None
        wrong = issued.token[:-1] + ("A" if issued.token[-1] != "A" else "B")
        assert credentials.authenticate(wrong) is None
        credentials.revoke(issued.credential.id)
        assert credentials.authenticate(issued.token) is None  # at once: nothing is cached
        with pool.connection() as conn:  # its expiry passed, as the database's clock tells
            conn.execute(
                "UPDATE am_service.credentials SET expires_at = now() WHERE id = %s",
                (brief.credential.id,),
            )
        assert credentials.authenticate(brief.token) is None
    finally:
        pool.close()


def test_a_failed_token_check_is_a_store_error(pg_database: str) -> None:
    pool = open_pool(pg_database, max_size=1)
    credentials = CredentialStore(pool)
    token = credentials.create(tenant="closed", repository=REPOSITORY).token
    pool.close()
    with pytest.raises(StoreError, match="checking a credential"):
        credentials.authenticate(token)
