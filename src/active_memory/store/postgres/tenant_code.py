"""The code a tenant's schema may hold, and what ``store check`` reports beyond it.

Cards are injected into agents' contexts, so code planted beside them is an attack: a trigger
that rewrites a row as it is written (after its checksum was computed from the screened card),
a function that shadows one a query calls (the schema is first on the ``search_path`` of the
tenant's transactions), a rule or a row policy that hides rows from a check. The schema's own
code is derived from its migrations (``PG_MIGRATIONS``): the triggers their statements create
and drop, in order, and each function's body as written between its ``$$``. Anything else, or a
body that differs, is a problem. PostgreSQL's catalogs are read as the tenant's reading
transaction sees them (``current_schema()``: its ``search_path``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from active_memory.store.migrations import Migration
from active_memory.store.postgres.schema import PG_MIGRATIONS

__all__ = ["tenant_code_problems"]

_CREATE_TRIGGER = re.compile(
    r"CREATE\s+TRIGGER\s+(\w+)\s.*?\sON\s+(\w+)\s.*?EXECUTE\s+FUNCTION\s+(\w+)\s*\(", re.S
)
_DROP_TRIGGER = re.compile(r"DROP\s+TRIGGER\s+(\w+)\s+ON\s+(\w+)")
_CREATE_FUNCTION = re.compile(r"CREATE\s+FUNCTION\s+(\w+)\s*\(.*?\$\$(.*?)\$\$", re.S)

_TRIGGERS = """SELECT c.relname, t.tgname, p.proname FROM pg_trigger AS t
    JOIN pg_class AS c ON c.oid = t.tgrelid JOIN pg_proc AS p ON p.oid = t.tgfoid
    WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"""
_FUNCTIONS = """SELECT proname, prosrc FROM pg_proc
    WHERE pronamespace = current_schema()::regnamespace"""
# Rules other than a view's own, views, row policies and operators: the schema's tables have
# none, and a query could be steered by any.
_OTHERS = """
    SELECT 'rule ' || r.rulename || ' on ' || c.relname FROM pg_rewrite AS r
        JOIN pg_class AS c ON c.oid = r.ev_class
        WHERE c.relnamespace = current_schema()::regnamespace AND r.rulename <> '_RETURN'
    UNION ALL SELECT 'view ' || relname FROM pg_class
        WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('v', 'm')
    UNION ALL SELECT 'row policy ' || p.polname || ' on ' || c.relname FROM pg_policy AS p
        JOIN pg_class AS c ON c.oid = p.polrelid
        WHERE c.relnamespace = current_schema()::regnamespace
    UNION ALL SELECT 'operator ' || oprname FROM pg_operator
        WHERE oprnamespace = current_schema()::regnamespace
    ORDER BY 1"""


@cache
def expected_code(
    migrations: tuple[Migration, ...] = PG_MIGRATIONS,
) -> tuple[frozenset[tuple[str, str, str]], dict[str, str]]:
    """The triggers (table, name, function) and the functions (name to body) that
    ``migrations`` leave in a schema."""
    triggers: dict[tuple[str, str], str] = {}
    functions: dict[str, str] = {}
    for migration in migrations:
        for statement in migration.statements:
            if found := _DROP_TRIGGER.search(statement):
                triggers.pop((found[2], found[1]), None)
            elif found := _CREATE_TRIGGER.search(statement):
                triggers[(found[2], found[1])] = found[3]
            elif found := _CREATE_FUNCTION.search(statement):
                functions[found[1]] = found[2]
    return frozenset((t, n, f) for (t, n), f in triggers.items()), functions


def tenant_code_problems(session: Any) -> list[str]:
    """Each trigger, function, rule, view, row policy or operator in the tenant's schema that
    its migrations did not create as they wrote it, one sentence each."""
    triggers, functions = expected_code()
    problems = []
    found = {(str(t), str(n), str(f)) for t, n, f in session.execute(_TRIGGERS).fetchall()}
    for table, name, function in sorted(found - triggers):
        problems.append(
            f"trigger {name} on {table} (calling {function}) was not created by active-memory"
        )
    for table, name, function in sorted(triggers - found):
        problems.append(f"trigger {name} on {table} (calling {function}) is missing")
    bodies = {str(name): str(body) for name, body in session.execute(_FUNCTIONS).fetchall()}
    for name in sorted(bodies.keys() - functions.keys()):
        problems.append(f"function {name} was not created by active-memory")
    for name in sorted(functions.keys() & bodies.keys()):
        if bodies[name] != functions[name]:
            problems.append(f"function {name} has been rewritten since active-memory created it")
    for name in sorted(functions.keys() - bodies.keys()):
        problems.append(f"function {name} is missing")
    for (what,) in session.execute(_OTHERS).fetchall():
        problems.append(f"{what} was not created by active-memory")
    if problems:
        problems.append(
            "code in the tenant's schema runs with every write: drop what active-memory did not "
            "create, or restore the schema from a backup"
        )
    return problems
