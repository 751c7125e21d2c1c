"""``active-memory store``: where the store is, whether it is healthy, and backups."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    emit_json,
    fail,
    local_store,
    open_store,
    store_json_command,
    store_path,
    team_store_json_command,
)
from active_memory.cli.store_location import store_path_text

if TYPE_CHECKING:
    from active_memory.store.results import StoreCheck

__all__ = ["store"]

# The backup helpers (sqlite3 among them) are imported by the commands that use them, as the
# store itself is: `store path` only computes a path.


@click.group()
def store() -> None:
    """Inspect and back up the lesson store."""


@store.command("path")
@store_json_command
def path_command(store: Path | None, as_json: bool) -> None:
    """Print the store file's path (it may not exist yet)."""
    click.echo(store_path_text(store_path(store), as_json=as_json))


@store.command("check")
@click.option(
    "--repair",
    is_flag=True,
    help="First rebuild the counts triggers keep (capacity, lessons by repository and graph) "
    "from a recount of the lessons.",
)
@team_store_json_command
def check_command(store: Path | str | None, repair: bool, as_json: bool) -> None:
    """Check the store and print counts; exit 1 when problems are found.

    A file gets SQLite's integrity check and every row validated; an existing one is opened
    for writing, so a pending schema upgrade is applied; a missing store is reported, not
    created; temporaries that killed backups left behind are removed. A PostgreSQL tenant
    (``postgresql://`` and ``$ACTIVE_MEMORY_TENANT``) gets its ledger and every row validated.
    With --repair, the counts the check compares with a recount are first set to it.
    """
    if isinstance(store, str):
        _check_tenant(store, repair, as_json)
        return
    from active_memory.store.backup import sweep_stale_backups

    chosen = store_path(store)
    read_only = not os.path.lexists(chosen)
    removed = sweep_stale_backups(chosen)
    with local_store(store, read_only=read_only) as opened:
        repaired = repair and not read_only  # a missing store has nothing to count
        if repaired:
            opened.rebuild_counts()
        report = opened.check()
    _print_check(report, removed, as_json, repaired=repaired)


def _check_tenant(url: str, repair: bool, as_json: bool) -> None:
    if not url.startswith(("postgresql://", "postgres://")):
        fail(
            "store check reads a store file or a PostgreSQL tenant; the memory service's "
            "operator checks its tenants with `active-memory store check --store "
            "postgresql://…` and ACTIVE_MEMORY_TENANT",
            EXIT_BAD_INPUT,
        )
    from active_memory.store.postgres import PostgresStore

    with open_store(url, read_only=not repair) as team:
        assert isinstance(team, PostgresStore)  # what a postgresql:// URL opens
        if repair:
            team.rebuild_counts()
        report = team.check()
    _print_check(report, [], as_json, repaired=repair)


def _print_check(
    report: StoreCheck, removed: list[Path], as_json: bool, *, repaired: bool = False
) -> None:
    if as_json:
        data = report.model_dump(mode="json")
        if removed:
            data["removed_backup_temporaries"] = [str(path) for path in removed]
        if repaired:
            data["repaired_counts"] = True
        emit_json(data)
    else:
        for path in removed:
            click.echo(f"removed a killed backup's temporary {str(path)!r}")
        if repaired:
            click.echo("rebuilt the counts kept by triggers from a recount of the lessons")
        rows = [
            ("path", report.path),
            ("integrity", "ok" if report.ok else "; ".join(report.problems)),
            ("schema", f"{report.schema_version} ({report.migrations} applied)"),
            ("generation", str(report.generation)),
            ("live lessons", str(report.live)),
            ("tombstones", str(report.tombstones)),
            ("history rows", str(report.history_rows)),
            ("content bytes", str(report.content_bytes)),
            ("file bytes", str(report.file_bytes)),
        ]
        for label, value in rows:
            click.echo(f"{label:<14} {value}")
    if not report.ok:
        raise click.exceptions.Exit(1)


@store.command("backup")
@click.argument("destination", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace DESTINATION if it is an existing file.")
@team_store_json_command
def backup_command(destination: Path, force: bool, store: Path | str | None, as_json: bool) -> None:
    """Copy the store to DESTINATION (0600) while it stays in use.

    An existing DESTINATION is refused unless --force; the store itself, its -wal/-shm files and
    directories are always refused.
    """
    from active_memory.store.files import backup_destination_problem

    if isinstance(store, str):
        fail(
            "store backup copies an SQLite store file; back up a PostgreSQL store with "
            "`pg_dump -n am_tenant_<tenant>` (the service's database the same way), which keeps "
            "everything; `active-memory lessons export --store URL` is no backup: it keeps each "
            "live lesson's current revision and each tombstone's id, revision and kind, not the "
            "past revisions, the held proposals or the generation",
            EXIT_BAD_INPUT,
        )
    problem = backup_destination_problem(store_path(store), destination, force=force)
    if problem is not None:
        fail(f"backup destination {str(destination)!r} {problem}", EXIT_BAD_INPUT)
    with local_store(store, read_only=True) as opened:
        written = opened.backup(destination, force=force)
    if as_json:
        emit_json({"backup": str(written)})
    else:
        click.echo(f"backup written to {written}")
