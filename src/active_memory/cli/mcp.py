"""``active-memory mcp``: an MCP server over stdio for Cursor and any other MCP client.

Serves the repository of the working directory (or ``--repository``) from the store, read-only:
``recall``, ``explain`` and ``list`` (see ``docs/mcp.md``). Standard output belongs to the
protocol; the one line this command prints itself goes to standard error.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import click

from active_memory.cli._common import (
    EXIT_FAILED,
    BoundedInt,
    fail,
    reports_errors,
    runs_option,
    store_option,
    store_path,
)
from active_memory.mcp_server.reads import StoreReads
from active_memory.mcp_server.workspace import Workspace

__all__ = ["mcp_command"]

_SDK_MODULES = ("mcp", "mcp_types")


@click.command("mcp")
@click.option(
    "--repository",
    "workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The repository to serve (default: the checkout holding the current directory).",
)
@click.option("--tokens", type=BoundedInt(1, 64_000), default=8_000, show_default=True,
              help="hookInjectionTokens budget per recall.")  # fmt: skip
@runs_option(" for explain's ledger")
@store_option
@reports_errors
def mcp_command(
    workspace: Path | None, tokens: int, runs: tuple[Path, ...], store: Path | None
) -> None:
    """Serve recall, explain and list to an MCP client over stdio (read-only)."""
    try:
        from active_memory.mcp_server.server import McpTools, serve_stdio
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] not in _SDK_MODULES:
            raise
        fail(
            "the MCP server needs the MCP SDK; install it with: pip install 'active-memory[mcp]'",
            EXIT_FAILED,
        )
    served = Workspace.at(workspace or Path.cwd())
    database = Path(os.path.abspath(store_path(store)))
    logging.basicConfig(level=logging.WARNING, format="active-memory mcp: %(message)s")
    click.echo(
        f"active-memory mcp: serving {served.key} ({served.root}) from {database}, read-only",
        err=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        serve_stdio(McpTools(StoreReads(database, served, runs=runs), tokens=tokens))
