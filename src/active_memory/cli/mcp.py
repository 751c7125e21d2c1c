"""``active-memory mcp``: an MCP server over stdio for Cursor and any other MCP client.

Serves the repository of the working directory (or ``--repository``) from the store, read-only:
``recall``, ``explain`` and ``list`` (see ``docs/mcp.md``). Standard output belongs to the
protocol; the one line this command prints itself goes to standard error.

The SDK (``mcp`` and ``anyio``) is the ``[mcp]`` extra: without it, this command and ``hooks
install`` for an MCP client say how to install it, exit 2 (:func:`mcp_sdk_problem`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
from pathlib import Path

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    BoundedInt,
    fail,
    open_store,
    reports_errors,
    runs_option,
    store_path,
    team_store_option,
    workspace_option,
)
from active_memory.mcp_server.reads import StoreReads
from active_memory.mcp_server.workspace import Workspace

__all__ = ["MCP_INSTALL", "mcp_command", "mcp_sdk_problem"]

MCP_INSTALL = "pip install 'active-memory[mcp]'"


# The [mcp] extra's own packages, in the order a missing one is named.
_EXTRA = ("anyio", "mcp")


def mcp_sdk_problem(*, load: bool = True) -> str | None:
    """None when the MCP server can be loaded; else what is wrong, as the start of a sentence.

    First each of the extra's packages must be installed. With ``load`` the server module is
    then imported: it imports only the SDK and this package, so any other module it cannot find
    is the extra's (a dependency of theirs), and any other ImportError there is an SDK the
    extra's pin rejects, which the same install replaces. ``hooks install`` passes
    ``load=False``: importing the SDK takes over a second, the whole cost of that command.
    """
    for name in _EXTRA:
        try:
            installed = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            installed = False
        if not installed:
            return f"the MCP server needs the MCP SDK ({name!r} is not installed)"
    if not load:
        return None
    try:
        importlib.import_module("active_memory.mcp_server.server")
    except ImportError as missing:
        name = missing.name or ""
        if name.split(".")[0] == "active_memory":
            raise
        if isinstance(missing, ModuleNotFoundError) and name:
            return f"the MCP server needs the MCP SDK ({name!r} is not installed)"
        return f"the MCP server cannot load the installed MCP SDK ({missing})"
    return None


@click.command("mcp")
@workspace_option("The repository to serve (default: the checkout holding the current directory).")
@click.option("--tokens", type=BoundedInt(1, 64_000), default=8_000, show_default=True,
              help="hookInjectionTokens budget per recall.")  # fmt: skip
@runs_option(" for explain's ledger")
@team_store_option
@reports_errors
def mcp_command(
    workspace: Path | None, tokens: int, runs: tuple[Path, ...], store: Path | str | None
) -> None:
    """Serve recall, explain and list to an MCP client over stdio (read-only)."""
    problem = mcp_sdk_problem()
    if problem is not None:
        fail(f"{problem}; install it with: {MCP_INSTALL}", EXIT_BAD_INPUT)
    served = Workspace.at(workspace or Path.cwd())
    logging.basicConfig(level=logging.WARNING, format="active-memory mcp: %(message)s")
    if isinstance(store, str):
        with open_store(store, read_only=True) as team:
            tenant = getattr(team, "tenant", "?")
            shown = getattr(team, "url", None) or f"the PostgreSQL store of tenant {tenant!r}"
            _serve(served, str(shown), StoreReads(None, served, runs=runs, team=team), tokens)
        return
    database = Path(os.path.abspath(store_path(store)))
    _serve(served, str(database), StoreReads(database, served, runs=runs), tokens)


def _serve(served: Workspace, source: str, reads: StoreReads, tokens: int) -> None:
    from active_memory.mcp_server.server import McpTools, serve_stdio

    click.echo(
        f"active-memory mcp: serving {served.key} ({served.root}) from {source}, read-only",
        err=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(McpTools(reads, tokens=tokens))
