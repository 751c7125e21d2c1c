"""A click group whose commands are rows of a table, each imported only when it is used.

Importing every command module costs most of a second (pydantic, git, the store, the provider
layer), which ``active-memory store path`` or ``--help`` never needs. A :class:`LazyGroup` holds
a table of name -> :class:`Lazy` (``"module:attribute"`` and the command's one-line help): it
imports a command's module when that command runs or shows its help, and lists the table's help
in its own ``--help`` without importing anything. The pattern is click's documented
``LazyGroup``; ``tests/cli/test_lazy_commands.py`` resolves every row and checks its help
against the command's own, so a typo or a stale line cannot ship.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from gettext import gettext as _
from typing import Any, NamedTuple

import click

from active_memory.cli.entry import EXIT_INTERRUPTED, INTERRUPTED_WHILE_STARTING, end_start_up

__all__ = ["Lazy", "LazyGroup"]


class Lazy(NamedTuple):
    """One row: where the command lives and the short help ``--help`` lists for it."""

    target: str  # "active_memory.cli.store:store"
    help: str  # the first sentence of the command's docstring, as click shortens it


class LazyGroup(click.Group):
    """A ``click.Group`` that also holds lazy commands (``lazy=``), loaded on first use."""

    def __init__(self, *args: Any, lazy: Mapping[str, Lazy] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, Lazy] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(_load(self.lazy[cmd_name].target), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if not isinstance(command, LazyGroup):
            end_start_up()  # the command to run and its modules are loaded (cli/entry.py)
        return name, command, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own version calls get_command for every name, which would import them all. A
        # stand-in built from a row shortens its line exactly as the command itself would.
        shown = [
            (name, self.commands.get(name) or click.Command(name, help=self.lazy[name].help))
            for name in self.list_commands(ctx)
        ]
        shown = [(name, command) for name, command in shown if not command.hidden]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name, _command in shown)
        rows = [(name, command.get_short_help_str(limit)) for name, command in shown]
        with formatter.section(_("Commands")):  # click's own heading, translated alike
            formatter.write_dl(rows)


def _load(target: str) -> click.Command:
    module_name, attribute = target.split(":", 1)
    try:
        command = getattr(importlib.import_module(module_name), attribute)
    except KeyboardInterrupt:
        # The import is most of a command's start-up: a Ctrl-C there is the user's, not a crash
        # (click would print "Aborted!" and exit 1).
        click.echo(INTERRUPTED_WHILE_STARTING, err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    if not isinstance(command, click.Command):
        raise TypeError(f"{target!r} is {type(command).__name__}, not a click command")
    return command
