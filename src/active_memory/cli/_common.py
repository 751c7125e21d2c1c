"""Shared CLI plumbing: ``--store``/``--json`` options, opening the store, error exits.

``--store`` is checked as it is parsed (:func:`~active_memory.store.paths.check_store_location`):
the zeroshot CLI's own store is bad input, exit 2, before any command creates a directory or a
file. ``team_store_option`` (the admin commands) also takes a team store, a ``postgresql://``
URL (tenant in ``$ACTIVE_MEMORY_TENANT``) or the memory service's URL (token in
``$ACTIVE_MEMORY_SERVICE_TOKEN``, never a flag value); ``store_option`` (commands that work on
the file itself) refuses any URL.

Exit codes: 0 success, 1 the work failed (store unusable, conflict, not found), 2 bad input
(malformed id, invalid import file, bad configuration). Errors go to stderr as one sentence.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import click

from active_memory.bounded_input import regular_file_problem
from active_memory.cli.store_location import json_text
from active_memory.errors import (
    ActiveMemoryError,
    ConfigError,
    InputRefused,
    LessonValidationError,
)
from active_memory.limits import LIMITS
from active_memory.store.paths import check_store_location, default_store_path

if TYPE_CHECKING:
    from active_memory.store.admin_backend import AdminBackend
    from active_memory.store.sqlite import SqliteStore

# The store and the lesson models (pydantic) are imported where they are used: every command
# imports this module, and `store path` or `--help` needs neither.

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "BoundedInt",
    "binary_stdin",
    "capped",
    "check_run_path",
    "emit_json",
    "expected_option",
    "fail",
    "grouped_options",
    "json_option",
    "lesson_id_argument",
    "local_store",
    "open_store",
    "reports_errors",
    "runs_option",
    "store_json_command",
    "store_option",
    "store_path",
    "team_store_json_command",
    "team_store_option",
    "workspace_option",
]

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
# What an error quotes of a value the user gave: a 5,000-digit argument is not echoed whole.
_ECHO_CHARS = 40

P = ParamSpec("P")
R = TypeVar("R")


def _store_location(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    # The text as typed: a Path would already have folded "postgresql://" into "postgresql:/".
    if value is None:
        return None
    try:
        return check_store_location(value)
    except ConfigError as error:
        fail(f"--store: {error.problem}", EXIT_BAD_INPUT)


store_option = click.option(
    "--store",
    "store",
    type=click.Path(),
    default=None,
    callback=_store_location,
    help="Lesson store file (default: see `active-memory store path`).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")

# The schemes a team store is named by; any other `scheme://` is refused as a file path.
_TEAM_SCHEMES = ("postgresql://", "postgres://", "https://", "http://")


def _team_store_location(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> Path | str | None:
    """A store file's Path, or a team store's URL as text (checked when it is opened)."""
    if value is not None and value.startswith(_TEAM_SCHEMES):
        return value
    if value is not None and "://" in value:
        scheme = capped(value.split("://", 1)[0].lower())  # never the rest: it may hold a password
        fail(
            f"--store: '{scheme}://…' is neither a store file, a postgresql:// URL nor the "
            "memory service's https:// URL",
            EXIT_BAD_INPUT,
        )
    return _store_location(ctx, param, value)


team_store_option = click.option(
    "--store",
    "store",
    default=None,
    callback=_team_store_location,
    help="Lesson store: a file (default: see `active-memory store path`), a postgresql:// URL "
    "(tenant in $ACTIVE_MEMORY_TENANT) or the memory service's https:// URL (token in "
    "$ACTIVE_MEMORY_SERVICE_TOKEN).",
)


def grouped_options(
    into: str,
    make: Callable[..., object],
    fields: Mapping[str, str],
    options: Sequence[Callable[[Callable[..., None]], Callable[..., None]]],
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A decorator adding ``options`` (in this order) whose values the command receives as one
    argument ``into``, made by ``make`` (``fields``: each option's parameter name to the
    keyword ``make`` takes it as)."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            kwargs[into] = make(**{field: kwargs.pop(name) for name, field in fields.items()})
            command(**kwargs)

        decorated: Callable[..., None] = wrapper
        for option in reversed(options):
            decorated = option(decorated)
        return decorated

    return decorate


def runs_option(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--runs``: the folders (or files) of run records, run logs, outcomes and reports a
    ledger reads, repeatable; ``what`` says what this command reads them for."""
    return click.option(
        "--runs",
        "runs",
        multiple=True,
        type=click.Path(exists=True, file_okay=True, dir_okay=True, path_type=Path),
        help=f"Run records, run logs, outcomes and reports{what}; repeatable "
        "(default: the runs folder beside the store).",
    )


def _lesson_id(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from active_memory.models.ids import validate_lesson_id

    try:
        return validate_lesson_id("ID", value)
    except LessonValidationError as error:
        problem = error.problem
        if len(value) > _ECHO_CHARS:
            problem = problem.replace(repr(value), repr(capped(value)))
        raise click.BadParameter(problem, ctx=ctx, param=param) from None


lesson_id_argument = click.argument("lesson_id", metavar="ID", callback=_lesson_id)


def store_path(store: Path | str | None) -> Path:
    return default_store_path() if store is None else check_store_location(store)


@contextmanager
def local_store(store: Path | str | None, *, read_only: bool) -> Iterator[SqliteStore]:
    """The SQLite store file ``store`` names (a URL is refused, exit 2)."""
    from active_memory.store.sqlite import SqliteStore

    with SqliteStore(store_path(store), read_only=read_only) as opened:
        yield opened


@contextmanager
def open_store(store: Path | str | None, *, read_only: bool) -> Iterator[AdminBackend]:
    """The store ``store`` names: a file (``read_only`` opens it so), PostgreSQL or the
    memory service (their access is their credential's)."""
    from active_memory.store.select import open_backend

    location = store_path(store) if not isinstance(store, str) else store
    with open_backend(location, read_only=read_only) as opened:
        yield opened


def team_store_json_command(command: Callable[P, R]) -> Callable[P, R]:
    """:func:`store_json_command` with a ``--store`` that also takes a team store's URL."""
    return team_store_option(json_option(reports_errors(command)))


def capped(value: object) -> str:
    """``value`` as text, cut to its first 40 characters and an ellipsis when longer."""
    text = str(value)
    return text if len(text) <= _ECHO_CHARS else text[:_ECHO_CHARS] + "…"


class BoundedInt(click.IntRange):
    """``click.IntRange`` whose errors quote at most 40 characters of the value given."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as error:
            text = str(value)
            if len(text) <= _ECHO_CHARS:
                raise
            # The message is final once raised (click types it Final): raise it again, cut.
            message = error.message.replace(repr(text), repr(capped(text)))
            raise click.BadParameter(
                message.replace(text, capped(text)),
                ctx=error.ctx,
                param=error.param,
                param_hint=error.param_hint,
            ) from None


def binary_stdin() -> IO[bytes]:
    """Standard input as bytes (what ``click.get_binary_stream("stdin")`` returned; click 8.5
    deprecates it, and CliRunner's input is found the same way, through ``sys.stdin``)."""
    if sys.stdin is None:  # started with its standard input closed
        fail("standard input is closed; give a file instead of `-`", EXIT_BAD_INPUT)
    return sys.stdin.buffer


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(code)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn library errors into one stderr sentence and the matching exit code."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (LessonValidationError, ConfigError, InputRefused) as error:
            fail(str(error), EXIT_BAD_INPUT)
        except ActiveMemoryError as error:
            fail(str(error), EXIT_FAILED)

    return wrapper


def store_json_command(command: Callable[P, R]) -> Callable[P, R]:
    """``--store`` and ``--json``, and library errors as :func:`reports_errors` reports them:
    what a command that reads or writes the store and prints data takes."""
    return store_option(json_option(reports_errors(command)))


def expected_option(help: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--expected N``: the revision the lesson must still be at, or nothing is written."""
    return click.option(
        "--expected", type=BoundedInt(1, LIMITS.revision_max), default=None, help=help
    )


def workspace_option(
    help: str, *, required: bool = False
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--repository``, as every command that serves recall reads it: an existing checkout
    folder, the workspace (passed as ``workspace``)."""
    return click.option(
        "--repository",
        "workspace",
        required=required,
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        help=help,
    )


def check_run_path(run: Path) -> None:
    """Refuse, exit 2, a RUN that is neither a folder nor a regular file (a FIFO, a device, a
    symlink to one, a path with a NUL) before anything opens it: opening a FIFO blocks until a
    writer comes and ``/dev/zero`` never ends."""
    if os.path.isdir(run):  # False for a path with a NUL, which the check below names
        return
    problem = regular_file_problem(run)
    if problem is not None:
        fail(f"RUN {str(run)!r} {problem}", EXIT_BAD_INPUT)


def emit_json(data: Any) -> None:
    click.echo(json_text(data))
