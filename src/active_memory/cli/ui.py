"""``active-memory ui``: browse the lesson store in a local web page.

It listens on a loopback address only and prints a URL with a one-time token; open it in a
browser on this machine. The token opens one session (a cookie) and is then spent.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from active_memory.cli._common import EXIT_BAD_INPUT, BoundedInt, fail, reports_errors, runs_option
from active_memory.errors import ConfigError
from active_memory.store.paths import check_store_location, default_store_path
from active_memory.store.select import is_team_location, open_backend

if TYPE_CHECKING:
    from active_memory.ui import UiData

__all__ = ["ui"]


@click.command("ui")
@click.option(
    "--store",
    "location",
    help="Lesson store: a file (default: see `active-memory store path`), a postgresql:// URL "
    "(tenant in $ACTIVE_MEMORY_TENANT) or the memory service's https:// URL (token in "
    "$ACTIVE_MEMORY_SERVICE_TOKEN).",
)
@runs_option(" for the ledgers and the runs page")
@click.option("--host", default="127.0.0.1", show_default=True, help="A loopback address.")
@click.option(
    "--port", type=BoundedInt(0, 65535), default=8766, show_default=True,
    help="Port (0: any free port).",
)  # fmt: skip
@reports_errors
def ui(location: str | None, runs: tuple[Path, ...], host: str, port: int) -> None:
    """Browse lessons, their cards, revisions and ledgers, the quarantine and the runs."""
    try:
        # Imported here: Starlette, uvicorn and Jinja2 are the `ui` extra, and every other
        # command must start without them.
        from active_memory.ui import UiData, UiServer
        from active_memory.ui.security import check_loopback
    except ImportError as error:
        fail(
            f"the browser needs {error.name or 'its web libraries'}; install it with "
            "pip install 'active-memory[ui]'",
            EXIT_BAD_INPUT,
        )
    try:
        check_loopback(host)
    except ConfigError as error:
        fail(f"--host: {error.problem}", EXIT_BAD_INPUT)
    if is_team_location(location):
        remote = open_backend(location)
        data: UiData = UiData(None, runs, remote=remote)
    else:
        try:
            path = check_store_location(location) if location else default_store_path()
        except ConfigError as error:
            fail(f"--store: {error.problem}", EXIT_BAD_INPUT)
        if not path.exists():
            fail(f"--store: no lesson store at {str(path)!r}", EXIT_BAD_INPUT)
        data = UiData(Path(path), runs)
    server = UiServer(data, host=host, port=port)
    server.serve(
        lambda url: click.echo(
            f"active-memory ui: open {url}\n(the link works once; Ctrl-C stops the server)"
        )
    )
