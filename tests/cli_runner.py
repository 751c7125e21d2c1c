"""How every test runs the CLI: in process, through click's ``CliRunner``, crashes re-raised.

``CliRunner`` catches any exception by default and reports it as exit 1, the code of a failed
piece of work, so a traceback could pass a test that expects 1. With ``catch_exceptions=False``
(as llm's tests run theirs) an exception the CLI did not turn into an exit code fails the test
with its traceback; ``SystemExit``, the way click ends every command, is still an exit code.
``tests/cli/test_cli_runner.py`` keeps every CLI test on this helper.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence

import click
from click.testing import CliRunner, Result

from active_memory.cli.main import main

__all__ = ["all_commands", "run_cli"]


def run_cli(
    args: Sequence[str | os.PathLike[str]],
    *,
    input: str | bytes | None = None,
    env: Mapping[str, str | None] | None = None,
    command: click.Command = main,
) -> Result:
    """Run ``command`` (default ``active-memory``) with ``args``; an unexpected exception
    propagates."""
    return CliRunner().invoke(
        command, [os.fspath(arg) for arg in args], input=input, env=env, catch_exceptions=False
    )


def all_commands(
    group: click.Group = main, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, click.Command]]:
    """Every command under ``group`` with its name as typed (``"lessons review list"``)."""
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from all_commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command
