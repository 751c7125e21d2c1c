"""``active-memory hooks install``: wire a harness's hooks (or an MCP client) to active-memory."""

from __future__ import annotations

import os
from pathlib import Path

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    emit_json,
    fail,
    store_json_command,
    store_path,
    workspace_option,
)
from active_memory.errors import RecallError
from active_memory.harnesses import HARNESS_NAMES
from active_memory.hooks.install import (
    MCP_HARNESSES,
    MCP_SERVER_NAME,
    Installation,
    install_hooks,
    install_mcp_server,
    mcp_server_entry,
)
from active_memory.hooks.serve_state import find_live, serve_paths
from active_memory.learn.folder import learn_folder

__all__ = ["hooks"]


@click.group()
def hooks() -> None:
    """Harness hooks that deliver recalled lessons."""


@hooks.command("install")
@click.option("--harness", required=True, type=click.Choice((*HARNESS_NAMES, *MCP_HARNESSES)))
@click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Install for this repository only (default: for the user).",
)
@workspace_option("The workspace recall serves (default: --project, else the current directory).")
@click.option(
    "--learn/--no-learn",
    default=None,
    help="Also install the session-end hook that queues each finished session for learning "
    "(--no-learn removes it; default: leave it as it is).",
)
@store_json_command
def install_command(
    harness: str,
    project: Path | None,
    workspace: Path | None,
    learn: bool | None,
    store: Path | None,
    as_json: bool,
) -> None:
    """Merge active-memory's hook into the harness configuration (idempotent, backed up).

    Writes the stdlib helper command: it asks the `active-memory serve` broker of the workspace
    (through its ticket, whether serve runs now or starts later) and reads the store itself when
    no broker answers. It prints {} and exits 0 whatever is missing. Without --project: the
    user's own config (Copilot CLI: $COPILOT_HOME/hooks, default ~/.copilot/hooks; Codex:
    $CODEX_HOME, default ~/.codex).

    cursor and mcp write an MCP server entry running `active-memory mcp` instead: Cursor's
    .cursor/mcp.json (the project's, else ~/.cursor/mcp.json serving the folder Cursor has
    open), or a project's .mcp.json; mcp without --project prints the entry. Both need the
    [mcp] extra and refuse (exit 2) without it.

    --learn also writes the harness's session-end hook (Claude Code and Codex SessionEnd,
    Copilot CLI sessionEnd, pi's extension on session_shutdown): it queues the finished
    session and starts `active-memory learn run`, which reviews it on the session's own
    harness lane.
    """
    # Hooks run from other directories: every path they are given must be absolute.
    database = Path(os.path.abspath(store_path(store)))
    if learn is not None and harness in MCP_HARNESSES:
        fail("--learn is for harness hooks; an MCP client has no session-end hook",
             EXIT_BAD_INPUT)  # fmt: skip
    if harness in MCP_HARNESSES:
        done = _install_mcp(harness, project, workspace, database)
        if done is None:
            return  # the entry was printed, for the user to add
        what = f"{done.harness} MCP server {MCP_SERVER_NAME!r}"
    else:
        done = _install_hook(harness, project, workspace, database, learn)
        what = f"{harness} {done.mode} hook"
    _report(done, what, as_json)
    if done.session_end is not None and not as_json:
        folder = learn_folder(database).path
        click.echo(f"learning: the {done.session_end} hook queues each finished session into "
                   f"{folder}; `active-memory learn status` lists them")  # fmt: skip


def _install_hook(
    harness: str, project: Path | None, workspace: Path | None, database: Path,
    learn: bool | None = None,
) -> Installation:  # fmt: skip
    root = (workspace or project or Path.cwd()).resolve()
    state_dir = database.parent / "serve"
    live = find_live(state_dir, root)
    try:
        return install_hooks(
            harness,
            workspace=root,
            store=database,
            serve=live,
            project=project.resolve() if project else None,
            ticket=serve_paths(state_dir, root)[1],
            learn=learn,
            learn_dir=learn_folder(database).path,
        )
    except RecallError as error:
        fail(str(error), EXIT_BAD_INPUT)


def _install_mcp(
    harness: str, project: Path | None, workspace: Path | None, database: Path
) -> Installation | None:
    """The MCP server entry written, or None when it was printed (``mcp`` without a project)."""
    # Imported here: the MCP server's modules (the screens among them) are no hook's concern.
    from active_memory.cli.mcp import MCP_INSTALL, mcp_sdk_problem

    # Refused rather than written with a warning: a client starts the entry out of sight, so a
    # server that cannot start shows only in its logs, while the warning scrolls away here.
    problem = mcp_sdk_problem(load=False)
    if problem is not None:
        fail(f"{problem}, so the {harness} entry could not start it; install it with: "
             f"{MCP_INSTALL}, then install the entry again", EXIT_BAD_INPUT)  # fmt: skip
    if harness == "mcp" and project is None:
        served = (workspace or Path.cwd()).resolve()
        entry = {"mcpServers": {MCP_SERVER_NAME: mcp_server_entry(str(served), database)}}
        emit_json(entry)
        return None
    chosen = workspace or project
    try:
        return install_mcp_server(
            harness,
            workspace=chosen.resolve() if chosen is not None else None,
            store=database,
            project=project.resolve() if project else None,
        )
    except RecallError as error:
        fail(str(error), EXIT_BAD_INPUT)


def _report(done: Installation, what: str, as_json: bool) -> None:
    """What was installed (``what``) where, the file it replaced, what was kept out of git and
    what the user still has to do."""
    if as_json:
        emit_json(done.model_dump(mode="json"))
        return
    verb = "installed" if done.changed else "already installed"
    click.echo(f"{verb}: {what} in {done.path}")
    if done.backup:
        click.echo(f"previous file kept as {done.backup}")
    exclusion = done.exclusion
    if exclusion.exclude_file:
        added = ", ".join(exclusion.added)
        click.echo(f"kept out of git: {added} added to {exclusion.exclude_file}")
    if exclusion.tracked:
        click.echo(
            f"warning: git tracks {done.path}, which holds a token or ticket path; untrack it "
            f"with: git rm --cached {done.path}",
            err=True,
        )
    for note in done.notes:
        click.echo(note)


@hooks.command("uninstall")
@click.option("--harness", required=True, type=click.Choice(HARNESS_NAMES))
@click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Uninstall from this repository only (default: from the user's config).",
)
def uninstall_command(harness: str, project: Path | None) -> None:
    """Remove active-memory's hooks (recall and session-end) from the harness configuration."""
    from active_memory.hooks.uninstall import uninstall_hooks

    try:
        path, changed = uninstall_hooks(harness, project=project.resolve() if project else None)
    except RecallError as error:
        fail(str(error), EXIT_BAD_INPUT)
    verb = "removed" if changed else "nothing to remove"
    click.echo(f"{verb}: active-memory's {harness} hooks in {path}")
