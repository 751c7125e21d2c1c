"""``active-memory sessions``: the sessions each coding harness left here, and which a
postmortem can review.

Each harness's folder comes from ``--<harness>-dir``, else its environment variable (see
:mod:`active_memory.evidence.inventory`), else the harness's default location.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from active_memory.cli._common import EXIT_BAD_INPUT, capped, emit_json, fail, json_option
from active_memory.evidence.inventory import (
    SESSION_FOLDERS,
    SessionEntry,
    default_roots,
    find_sessions,
    session_files,
    session_root,
)
from active_memory.evidence.sources.detect import HARNESSES

__all__ = ["sessions"]


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


_HOMES = {"claude": ("CLAUDE_CONFIG_DIR", "~/.claude"), "codex": ("CODEX_HOME", "~/.codex"),
          "pi": ("PI_CODING_AGENT_DIR", "~/.pi/agent"),
          "copilot": ("COPILOT_HOME", "~/.copilot")}  # fmt: skip


def _dir_help(harness: str) -> str:
    variable, home = _HOMES[harness]
    return (f"The {harness} home ({variable}, e.g. {home}) or its {SESSION_FOLDERS[harness]}/ "
            f"folder (default: ACTIVE_MEMORY_{harness.upper()}_DIR, else {variable}, else "
            f"{home}).")  # fmt: skip


def _where(name: str, folder: Path) -> str:
    if not folder.is_dir():
        return " (not found)"
    if next(session_files(name, folder), None) is not None:
        return ""
    return (f" (no {name} sessions here: give the {name} home, e.g. {_HOMES[name][1]}, or its "
            f"{SESSION_FOLDERS[name]}/ folder)")  # fmt: skip


_FOLDER = click.Path(file_okay=False, path_type=Path)


@click.command("sessions")
@click.option("--harness", type=click.Choice(HARNESSES), help="Only this harness's sessions.")
@click.option(
    "--repository",
    type=click.Path(file_okay=False, path_type=Path),
    help="Only sessions run in this checkout (or a folder inside it).",
)
@click.option("--since", help="Only sessions that ended on or after this date (ISO 8601, UTC).")
@click.option("--claude-dir", type=_FOLDER, help=_dir_help("claude"))
@click.option("--codex-dir", type=_FOLDER, help=_dir_help("codex"))
@click.option("--pi-dir", type=_FOLDER, help=_dir_help("pi"))
@click.option("--copilot-dir", type=_FOLDER, help=_dir_help("copilot"))
@json_option
def sessions(
    harness: str | None,
    repository: Path | None,
    since: str | None,
    claude_dir: Path | None,
    codex_dir: Path | None,
    pi_dir: Path | None,
    copilot_dir: Path | None,
    as_json: bool,
) -> None:
    """List the finished sessions of Claude Code, Codex, pi and Copilot CLI found here, with
    their checkout, times, size and models, and whether a postmortem can review each."""
    roots = default_roots()
    given = {"claude": claude_dir, "codex": codex_dir, "pi": pi_dir, "copilot": copilot_dir}
    roots.update({name: session_root(name, folder.expanduser())
                  for name, folder in given.items() if folder is not None})  # fmt: skip
    found = find_sessions(roots, harness=harness, repository=repository, since_ms=_since(since))
    if as_json:
        emit_json({"roots": {name: str(folder) for name, folder in sorted(roots.items())},
                   "sessions": [entry.model_dump(mode="json") for entry in found]})  # fmt: skip
        return
    for name in HARNESSES:
        if harness in (None, name):
            click.echo(f"{name:<8} sessions in {roots[name]}{_where(name, roots[name])}")
    for entry in found:
        click.echo(_line(entry))
    reviewable = sum(entry.reviewable for entry in found)
    click.echo(f"{len(found)} session(s), {reviewable} reviewable")
