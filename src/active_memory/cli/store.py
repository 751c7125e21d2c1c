"""``active-memory store``: where the store is, whether it is healthy, and backups."""

from __future__ import annotations

import os
from pathlib import Path

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    emit_json,
    fail,
    local_store,
    store_json_command,
    store_path,
    team_store_json_command,
)
from active_memory.cli.store_location import store_path_text

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
@team_store_json_command
def check_command(store: Path | str | None, as_json: bool) -> None:
    """Run SQLite's integrity check and print counts; exit 1 when problems are found.

    An existing store is opened for writing, so a pending schema upgrade is applied; a missing
    store is reported, not created. Temporaries that killed backups left behind are removed.
    """
    from active_memory.store.backup import sweep_stale_backups

    if isinstance(store, str):
        fail(
            "store check inspects an SQLite store file; a team store's rows are verified "
            "against their checksums by every snapshot, and its database is checked with "
            "PostgreSQL's own tools (amcheck, pg_dump)",
            EXIT_BAD_INPUT,
        )
    chosen = store_path(store)
    read_only = not os.path.lexists(chosen)
    removed = sweep_stale_backups(chosen)
    with local_store(store, read_only=read_only) as opened:
        report = opened.check()
    if as_json:
        data = report.model_dump(mode="json")
        if removed:
            data["removed_backup_temporaries"] = [str(path) for path in removed]
        emit_json(data)
    else:
        for path in removed:
            click.echo(f"removed a killed backup's temporary {str(path)!r}")
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
            "`pg_dump -n am_tenant_<tenant>` (the service's database the same way), or keep "
            "`active-memory lessons export --store URL` as a portable copy",
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
