"""``active-memory sessions``: the sessions each coding harness left here, and which a
postmortem can review.

Each harness's folder comes from ``--home HARNESS=DIR``, else its environment variable (see
:mod:`active_memory.evidence.inventory`), else the harness's default location: all three from
its row in :mod:`active_memory.harnesses`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from active_memory.cli._common import EXIT_BAD_INPUT, capped, emit_json, fail, json_option
from active_memory.evidence.inventory import (
    SessionEntry,
    default_roots,
    find_sessions,
    session_files,
    session_root,
)
from active_memory.harnesses import HARNESS_NAMES, HARNESSES, harness_row

__all__ = ["sessions"]

Command = TypeVar("Command", bound=Callable[..., Any])


def _since(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        fail(f"--since {capped(text)!r} is not a date; give one such as 2026-11-30 or "
             "2026-11-30T08:00", EXIT_BAD_INPUT)  # fmt: skip
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _size(count: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= factor:
            return f"{count / factor:.1f} {unit}"
    return f"{count} B"


def _line(entry: SessionEntry) -> str:
    models = ",".join(entry.models) or "-"
    review = "yes" if entry.reviewable else f"no: {entry.reason}"
    return (f"{entry.harness:<8} {_when(entry.started_ms):<16}  {_when(entry.ended_ms):<16}  "
            f"{_size(entry.size_bytes):>9}  {models[:40]:<40}  {entry.cwd or '-'}\n"
            f"         {entry.path}\n         reviewable {review}")  # fmt: skip


# Where the deprecated flags leave their folders for the command (they expose no parameter).
_OLD_HOMES = "active_memory.sessions.old_homes"
_FOLDER = click.Path(file_okay=False, path_type=Path)


def _home_help() -> str:
    homes = ", ".join(f"{row.name} {row.shown_home} (${row.home_variable}; sessions in "
                      f"{row.sessions}/)" for row in HARNESSES)  # fmt: skip
    return ("The home of a harness, or the sessions folder inside it; repeat for several "
            "harnesses. Default: $ACTIVE_MEMORY_<HARNESS>_DIR, else the harness's own variable, "
            f"else its default home: {homes}.")  # fmt: skip


def _where(name: str, folder: Path) -> str:
    if not folder.is_dir():
        return " (not found)"
    if next(session_files(name, folder), None) is not None:
        return ""
    row = harness_row(name)
    return (f" (no {name} sessions here: give the {name} home, e.g. {row.shown_home}, or its "
            f"{row.sessions}/ folder)")  # fmt: skip


def _homes(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, Path]:
    """``--home HARNESS=DIR`` values as a harness-to-folder map; bad input is exit 2."""
    homes: dict[str, Path] = {}
    for value in values:
        name, equals, folder = value.partition("=")
        if not equals or not folder:
            fail(f"--home {capped(value)!r} is not HARNESS=DIR; give one such as "
                 f"--home claude=~/.claude", EXIT_BAD_INPUT)  # fmt: skip
        if name not in HARNESS_NAMES:
            fail(f"--home {capped(value)!r} names no harness; choose one of "
                 f"{', '.join(HARNESS_NAMES)}", EXIT_BAD_INPUT)  # fmt: skip
        if name in homes:
            fail(f"--home names {name} twice; give each harness one home", EXIT_BAD_INPUT)
        homes[name] = Path(folder).expanduser()
        if homes[name].is_file():
            fail(f"--home {name}: {str(homes[name])!r} is a file; give the {name} home or its "
                 f"{harness_row(name).sessions}/ folder", EXIT_BAD_INPUT)  # fmt: skip
    return homes


def _deprecated_dir(name: str) -> Callable[[click.Context, click.Parameter, Path | None], None]:
    def keep(ctx: click.Context, param: click.Parameter, folder: Path | None) -> None:
        if folder is not None:
            click.echo(f"warning: --{name}-dir is deprecated; use --home {name}=DIR", err=True)
            ctx.meta.setdefault(_OLD_HOMES, {})[name] = folder

    return keep


def _deprecated_dirs(command: Command) -> Command:
    """The ``--<harness>-dir`` flags ``--home`` replaced: hidden and kept for one release, each
    saying so on stderr when used."""
    for row in HARNESSES:
        old = click.option(f"--{row.name}-dir", type=_FOLDER, hidden=True, expose_value=False,
                           callback=_deprecated_dir(row.name))  # fmt: skip
        command = old(command)
    return command


@click.command("sessions")
@click.option("--harness", type=click.Choice(HARNESS_NAMES), help="Only this harness's sessions.")
@click.option(
    "--repository",
    type=click.Path(file_okay=False, path_type=Path),
    help="Only sessions run in this checkout (or a folder inside it).",
)
@click.option("--since", help="Only sessions that ended on or after this date (ISO 8601, UTC).")
@click.option("--home", "homes", multiple=True, metavar="HARNESS=DIR", callback=_homes,
              help=_home_help())  # fmt: skip
@_deprecated_dirs
@json_option
def sessions(
    harness: str | None,
    repository: Path | None,
    since: str | None,
    homes: dict[str, Path],
    as_json: bool,
) -> None:
    """List the finished sessions of Claude Code, Codex, pi and Copilot CLI found here, with
    their checkout, times, size and models, and whether a postmortem can review each."""
    roots = default_roots()
    given = {**click.get_current_context().meta.get(_OLD_HOMES, {}), **homes}
    roots.update({name: session_root(name, folder.expanduser())
                  for name, folder in given.items()})  # fmt: skip
    found = find_sessions(roots, harness=harness, repository=repository, since_ms=_since(since))
    if as_json:
        emit_json({"roots": {name: str(folder) for name, folder in sorted(roots.items())},
                   "sessions": [entry.model_dump(mode="json") for entry in found]})  # fmt: skip
        return
    for name in HARNESS_NAMES:
        if harness in (None, name):
            click.echo(f"{name:<8} sessions in {roots[name]}{_where(name, roots[name])}")
    for entry in found:
        click.echo(_line(entry))
    reviewable = sum(entry.reviewable for entry in found)
    click.echo(f"{len(found)} session(s), {reviewable} reviewable")
