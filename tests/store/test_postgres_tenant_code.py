"""``store check`` on PostgreSQL holds the tenant schema's code to what its migrations created
(``store/postgres/tenant_code.py``): code planted beside the cards runs with every write."""

from __future__ import annotations

import time

import psycopg
import pytest
from test_postgres import _create

from active_memory.store.postgres import PostgresStore, tenant_schema
from active_memory.store.postgres.tenant_code import expected_code
from factories import make_draft

_tenants = iter(range(1, 10_000))


@pytest.fixture
def tenant() -> str:
    return f"code{next(_tenants)}_{int(time.time() * 1000) % 100_000}"


_PLANTED = {
    "a trigger": (
        "CREATE FUNCTION {s}.rewrite() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "NEW.body := replace(NEW.body, 'a', 'b'); RETURN NEW; END $$; "
        "CREATE TRIGGER rewrite BEFORE UPDATE ON {s}.records FOR EACH ROW "
        "EXECUTE FUNCTION {s}.rewrite()",
        ["trigger rewrite on records (calling rewrite) was not created by active-memory",
         "function rewrite was not created by active-memory"],
    ),
    "a rewritten function": (
        "CREATE OR REPLACE FUNCTION {s}.records_scope() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN NEW.scoped := 0; RETURN NEW; END $$",
        ["function records_scope has been rewritten since active-memory created it"],
    ),
    "a dropped trigger": (
        "DROP TRIGGER records_count_update ON {s}.records",
        ["trigger records_count_update on records (calling records_count) is missing"],
    ),
    "a function shadowing one a query calls": (
        "CREATE FUNCTION {s}.unnest(text) RETURNS text LANGUAGE sql AS $$ SELECT $1 $$",
        ["function unnest was not created by active-memory"],
    ),
    "a rule": (
        "CREATE RULE hide AS ON UPDATE TO {s}.history DO INSTEAD NOTHING",
        ["rule hide on history was not created by active-memory"],
    ),
    "a row policy": (
        "CREATE POLICY few ON {s}.records USING (false)",
        ["row policy few on records was not created by active-memory"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("planted", sorted(_PLANTED))
def test_code_planted_in_the_tenant_schema_is_reported(
    pg_database: str, tenant: str, planted: str
) -> None:
    statement, reported = _PLANTED[planted]
    with PostgresStore(pg_database, tenant=tenant) as store:
        _create(store, make_draft("A lesson"))
        assert store.check().ok
        with psycopg.connect(pg_database, autocommit=True) as conn:
            conn.execute(statement.format(s=tenant_schema(tenant)).encode())
        result = store.check()
    assert not result.ok
    for problem in reported:
        assert problem in result.problems
    assert "drop what active-memory did not create" in result.problems[-1]


def test_the_code_expected_is_what_the_migrations_leave() -> None:
    """Derived from the migrations' own statements: m004 dropped two triggers and created
    four, each of the three functions once."""
    triggers, functions = expected_code()
    assert {name for _, name, _ in triggers} == {
        "records_count", "records_count_update", "records_scope", "scope_counts",
        "scope_counts_update",
    }  # fmt: skip
    assert sorted(functions) == ["records_count", "records_scope", "scope_counts"]
    assert all("BEGIN" in body and "END" in body for body in functions.values())
