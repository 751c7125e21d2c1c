"""What a direct publication's database share would cost as one server-side call, for
``team_bench.py``'s floors.

The store sends a publication as a read, then one pipeline of statements (``store/postgres/
at_once.py``): its start, its settings with the writers' lock, the guarded step of the
generation, a records ``UPDATE`` a row, the history rows, the search words and its ``COMMIT``.
Each statement costs psycopg and PostgreSQL their own round of work. Here the same recorded
publications (``team_replay``) are sent again with the same read, then everything after it as
one call of a PL/pgSQL function that this benchmark installs in its own tenant: the writers'
lock, the store's own guard (its text, read from ``at_once``), and the same rows written by one
statement a table. It measures a design the store does not have (its writes would then be
planned twice, in Python for SQLite and in PL/pgSQL), so that its cost can be weighed.

Only the statements the publication race sends are understood (an upsert that keeps a lesson's
scope); anything else stops the benchmark rather than be measured as something it is not.
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

from team_replay import Recorded

__all__ = ["install", "send"]

_FUNCTION = "publish_recorded"
_RECORDS = "UPDATE records SET revision = ?, node_id = ?, body = ?, evidence = ?, size = ?, "
_HISTORY = "INSERT INTO history (id, revision, op, body, evidence, source_revision, generation"
_TEXTS = "INSERT INTO lesson_text (id, words) VALUES "
_GENERATION_READ = "(SELECT generation FROM meta)"  # in each history row, as written
_GUARD_PARAMETERS = 12
# A history row's values as the store binds them (its generation is read in the statement).
_HISTORY_NAMES = ("id", "revision", "op", "body", "evidence", "source_revision", "run_id", "time")


def _body(guard: str) -> str:
    numbered = iter(range(1, _GUARD_PARAMETERS + 1))
    guarded = re.sub(r"\?", lambda _: f"${next(numbered)}", guard)
    return f"""
DECLARE written bigint;
BEGIN
  PERFORM 1 FROM meta FOR UPDATE;
  {guarded} INTO written;
  UPDATE records AS r SET revision = v.revision, node_id = v.node_id, body = v.body,
      evidence = v.evidence, size = v.size, checksum = v.checksum
    FROM jsonb_to_recordset($13) AS v(revision bigint, node_id text, body text, evidence text,
      size bigint, checksum text, id text)
    WHERE r.id = v.id;
  INSERT INTO history (id, revision, op, body, evidence, source_revision, generation, run_id,
      time)
    SELECT v.id, v.revision, v.op, v.body, v.evidence, v.source_revision, written, v.run_id,
      v.time
    FROM jsonb_to_recordset($14) AS v(id text, revision bigint, op text, body text,
      evidence text, source_revision bigint, run_id text, time text);
  INSERT INTO lesson_text (id, words)
    SELECT v.id, array_to_tsvector(string_to_array(v.words, ' '))
    FROM jsonb_to_recordset($15) AS v(id text, words text)
    ON CONFLICT (id) DO UPDATE SET words = excluded.words;
  RETURN written;
END"""


def install(url: str, tenant: str) -> None:
    """The function, in ``tenant``'s schema (created by the store beforehand), with the
    settings a write sent whole takes that bear on its work: the schema, the lock timeout and
    generic plans (a statement timeout set on a function would not bound the call itself)."""
    import psycopg

    from active_memory.store.postgres.at_once import _GUARDED_GENERATION
    from active_memory.store.postgres.schema import tenant_schema

    schema = tenant_schema(tenant)
    if _GUARDED_GENERATION.count("?") != _GUARD_PARAMETERS:
        raise SystemExit("the store's guard changed its parameters: update team_one_call.py")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f'CREATE FUNCTION "{schema}".{_FUNCTION}(float8, bigint, bigint, bigint, bigint, '
            "bigint, bigint, bigint, text[], bigint, jsonb, bigint, jsonb, jsonb, jsonb) "
            f'RETURNS bigint LANGUAGE plpgsql SET search_path = "{schema}" '
            "SET lock_timeout = 60000 "
            "SET plan_cache_mode = force_generic_plan "
            f"AS $publish$ {_body(_GUARDED_GENERATION)} $publish$"
        )


def _arguments(statements: list[tuple[str, str, Any]]) -> tuple[Any, ...]:
    """The function's arguments for one recorded pipeline: the guard's, then the rows of each
    table as JSON."""
    from active_memory.store.postgres.at_once import _GUARDED_GENERATION

    if [method for method, _, _ in statements] != ["execute", "executemany", "execute", "execute"]:
        raise SystemExit("a recorded publication wrote other statements than the race's upserts")
    (guard_sql, guard), (records_sql, records), (history_sql, history), (texts_sql, texts) = (
        statement[1:] for statement in statements
    )
    history_rows = _rows(_HISTORY_NAMES, history)
    if not (
        guard_sql == _GUARDED_GENERATION
        and len(guard) == _GUARD_PARAMETERS
        and records_sql.startswith(_RECORDS)
        and history_sql.startswith(_HISTORY)
        and history_sql.count(_GENERATION_READ) == len(history_rows)
        and texts_sql.startswith(_TEXTS)
    ):
        raise SystemExit("a recorded publication wrote other statements than the race's upserts")
    names = ("revision", "node_id", "body", "evidence", "size", "checksum", "id")
    return (
        *guard,
        [dict(zip(names, row, strict=True)) for row in records],
        history_rows,
        _rows(("id", "words"), texts),
    )


def _rows(names: tuple[str, ...], flat: tuple[Any, ...]) -> list[dict[str, Any]]:
    width = len(names)
    if len(flat) % width:
        raise SystemExit("a recorded statement's parameters are not whole rows")
    starts = range(0, len(flat), width)
    return [dict(zip(names, flat[at : at + width], strict=True)) for at in starts]


def send(url: str, tenant: str, path: Path, ready: Any) -> None:
    """Send the recording at ``path`` to ``tenant``, each publication its read then one call,
    one after another, once ``ready()`` returns (the race's start)."""
    from active_memory.store.postgres.schema import tenant_schema
    from active_memory.store.postgres.session import open_pool, read_all_once

    recorded: Recorded = pickle.loads(path.read_bytes())  # written by this benchmark
    schema = tenant_schema(tenant)
    prepared = [(queries, _arguments(statements)) for queries, statements in recorded]
    # The guard's ten scalars and its ids, the rows it read (JSON), their count, then each
    # table's rows.
    placeholders = ", ".join(["%s"] * 10 + ["%s::jsonb", "%s"] + ["%s::jsonb"] * 3)
    call = f'SELECT "{schema}".{_FUNCTION}({placeholders})'.encode()
    pool = open_pool(url, max_size=1)
    try:
        ready()
        for queries, (*guard, records, history, texts) in prepared:
            read_all_once(pool, schema, "one call", queries)
            with pool.connection() as conn:
                conn.execute(
                    call, (*guard, json.dumps(records), json.dumps(history), json.dumps(texts))
                ).fetchone()
    finally:
        pool.close()
