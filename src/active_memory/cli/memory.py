"""``active-memory memory init``: learn lessons from every finished local run, resumably.

One command, called again and again with the same ``--dir`` from any folder: the first
call inventories the runs and exports tasks; each later call imports the responses written
since and exports what is next, until ``phase: complete`` returns the publication receipt.
``--provider NAME`` answers the tasks with this project's specialists instead of the host
agent's subagents. Exit codes: 0 the call advanced (or the session is complete); 1 it was
stopped (a changed checkout, another call holding the session) or ``--provider`` left tasks
open; 2 bad input, refused before any work when it is an argument (``fix_arguments``: a store
URL, an unknown provider); 130 or 143 interrupted by SIGINT or SIGTERM (call again to resume).
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    BoundedInt,
    emit_json,
    json_option,
    store_path,
)
from active_memory.cli.spellings import RenamedOption
from active_memory.errors import ActiveMemoryError, ConfigError
from active_memory.store.paths import check_store_location

if TYPE_CHECKING:
    from active_memory.history_init import Answer, InitOptions

__all__ = ["memory"]


@click.group("memory")
def memory() -> None:
    """Memory-wide workflows (initialisation from local history)."""


_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
# Its crash safety is a receipt row committed in the publishing transaction of the store itself
# (store/init_receipts.py), which only the local SQLite store has.
_LOCAL_ONLY = (
    "memory init publishes only to a local SQLite store file: its crash-safe publication "
    "writes a receipt row in the store's own transaction, which the PostgreSQL backend and "
    "the team service do not offer; give the path of a store file (default: "
    "`active-memory store path`)"
)


def _store_problem(value: str | None) -> str | None:
    """Why ``value`` cannot be this session's store, or None. A URL (never echoed: it may carry
    a password) is refused before any work, so a user never answers every task only to meet a
    store that cannot publish."""
    if value is None:
        return None
    url = _URL.match(value)
    if url is not None:
        return f"--store: '{url.group(1).lower()}://…' is not a store file; {_LOCAL_ONLY}"
    try:
        check_store_location(value)
    except ConfigError as error:
        return f"--store: {error.problem}"
    return None


def _provider_problem(name: str | None) -> str | None:
    """Why ``name`` is no --provider memory init can use, or None; checked before the session
    is created."""
    from active_memory.agents.providers.registry import provider_names

    if name is None:
        return None
    known = ", ".join(known for known in provider_names() if known != "replay")
    if name == "replay":
        return (
            "--provider replay answers from a recorded exchanges file, which memory init "
            f"does not take; use one of: {known}"
        )
    if name not in provider_names():
        return f"--provider {name[:40]!r} is not a provider; known: {known}"
    return None


class _Interrupted(BaseException):
    """SIGINT or SIGTERM during a call: the session keeps every step checkpointed before it."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.signal_name = signal.Signals(number).name
        super().__init__(self.signal_name)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C and SIGTERM end the call with one sentence and 128+signal, not a traceback or
    click's bare "Aborted!". Every state change is an atomic checkpoint and a publication is
    one transaction (its receipt row closes the gap to the checkpoint), so stopping anywhere
    leaves a session the next call resumes."""

    def stop(number: int, frame: object) -> None:
        raise _Interrupted(number)

    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except KeyboardInterrupt:
        raise _Interrupted(signal.SIGINT) from None
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _resumable(command: Callable[..., None]) -> Callable[..., None]:
    """Run ``command`` :func:`_interruptible`: a signal ends the call with one sentence (and the
    JSON answer with ``--json``) saying to call again, exit 128+signal."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        try:
            with _interruptible():
                command(**kwargs)
        except _Interrupted as stopped:
            _refused(
                f"interrupted by {stopped.signal_name}; every step saved before it is kept: "
                "call the same command again to resume",
                128 + stopped.number,
                kwargs["as_json"],
                "call_again",
            )

    return wrapper


def _print(data: dict[str, Any]) -> None:
    inventory = data["inventory"]
    click.echo(f"session      {data['session']}")
    click.echo(f"phase        {data['phase']}")
    click.echo(
        f"inventory    {inventory['candidates']} run(s): {inventory['selected']} selected, "
        f"{inventory['excluded']} excluded"
    )
    for repository in data["repositories"]:
        runs = sum(run["repository"] == repository["repository"] for run in data["runs"])
        click.echo(
            f"  selected   {repository['repository']}  {repository['checkout']}  ({runs} run(s))"
        )
    for item in data["exclusions"]:
        click.echo(f"  excluded   {item['code']:<18} {item['source']}: {item['reason']}")
    tasks = data["tasks"]
    click.echo(f"tasks        {tasks['done']} done, {tasks['open']} left")
    for task in tasks["items"]:
        click.echo(f"  open       {task['task']}  {task['task_file']}")
    for refused in data["refused"]:
        click.echo(f"  refused    {refused}")
    for item in data["rejections"]:
        which = f"item {item['index']}" if item["index"] is not None and item["index"] >= 0 else ""
        click.echo(f"  rejected   {item['task']} {which}: {item['stage']} {item['code']}".rstrip())
    staged = data["staged"]
    if any(staged.values()):
        click.echo(
            f"findings     {staged['staged']} staged, {staged['kept']} kept, "
            f"{staged['deferred']} deferred, {staged['quarantined']} quarantined"
        )
    for note in data["notes"]:
        click.echo(f"note         {note}")
    receipt = data["receipt"]
    if receipt is not None:
        created, retired = len(receipt["created"]), len(receipt["retired"])
        adapted = len(receipt["revisions"]) - created - retired
        click.echo(
            f"receipt      generation {receipt['generation']}: {created} created, {adapted} "
            f"adapted, {retired} retired, {len(receipt['deferred'])} deferred, "
            f"{len(receipt['quarantined'])} held for `active-memory lessons review`"
        )
    click.echo(f"next         {data['next_action']}: {data['instructions']}")


def _refused(
    message: str, code: int, as_json: bool, next_action: str, phase: str | None = None
) -> None:
    if as_json:
        emit_json({"phase": phase, "next_action": next_action, "error": message})
    click.echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(code)


@memory.command("init")
@click.option(
    "--dir",
    "directory",
    cls=RenamedOption,
    old="--directory",
    required=True,
    metavar="DIR",
    help="The private session folder (created 0700 on the first call; outside every checkout).",
)
@click.option(
    "--ignore-repos",
    multiple=True,
    metavar="LIST",
    help="Repositories to leave out, matched exactly against the inventory's aliases "
    "(folder name, absolute path, owner/repo, repository key); comma- or "
    "space-separated, repeatable. Saved in the session.",
)
@click.option(
    "--ignore-graphs",
    multiple=True,
    metavar="LIST",
    help="Graphs to leave out: exact root names or graph hashes from the inventory. "
    "Saved in the session.",
)
@click.option(
    "--provider",
    "provider_name",
    help="Answer the tasks with this project's specialists through this provider "
    "(e.g. anthropic, openai) instead of the host agent's subagents.",
)
@click.option("--model", help="The model for --provider (default: each run's own).")
@click.option(
    "--timeout-ms",
    type=BoundedInt(1, 86_400_000),
    default=1_800_000,
    show_default=True,
    help="One shared deadline for every --provider session.",
)
@click.option(
    "--store",
    "store",
    default=None,
    metavar="FILE",
    help="Lesson store file (default: see `active-memory store path`); a local SQLite file "
    "only, bound to the session on its first call.",
)
@json_option
@_resumable
def init(
    directory: str,
    ignore_repos: tuple[str, ...],
    ignore_graphs: tuple[str, ...],
    provider_name: str | None,
    model: str | None,
    timeout_ms: int,
    store: str | None,
    as_json: bool,
) -> None:
    """Initialise memory from every finished local run, in one resumable session at DIR.

    Each call answers the phase and the next action: answer the open tasks (write each task's
    response.json), then call again with the same --dir.
    """
    from active_memory.history_init import InitOptions, InitRefused
    from active_memory.history_init.advance import parse_ignore
    from active_memory.history_init.inventory import saved_runs_dir

    context = click.get_current_context()
    given_alone = [
        flag
        for flag, name in (("--model", "model"), ("--timeout-ms", "timeout_ms"))
        if provider_name is None
        and context.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]
    problem = (
        (
            f"{' and '.join(given_alone)} "
            f"{'only applies' if len(given_alone) == 1 else 'only apply'} with --provider: "
            "drop it, or name the provider the specialists run on"
            if given_alone
            else None
        )
        or (
            "--dir is empty; give a new private folder, e.g. "
            "~/.local/state/active-memory/init/SESSION"
            if not directory.strip()
            else None
        )
        or _store_problem(store)
        or _provider_problem(provider_name)
    )
    if problem is not None:
        _refused(problem, EXIT_BAD_INPUT, as_json, "fix_arguments")
        return
    options = InitOptions(
        directory=Path(directory),
        store=store_path(None if store is None else Path(store)),
        ignore_repos=parse_ignore(ignore_repos),
        ignore_graphs=parse_ignore(ignore_graphs),
        saved_runs=saved_runs_dir(),
    )
    try:
        answer = _drive(options, provider_name, model, timeout_ms, as_json)
    except InitRefused as refused:
        code = EXIT_BAD_INPUT if refused.bad_input else EXIT_FAILED
        action = "start_new_session" if refused.bad_input else "restore_or_wait"
        _refused(str(refused), code, as_json, action, refused.phase)
        return
    except ActiveMemoryError as error:
        _refused(str(error), EXIT_FAILED, as_json, "restore_or_wait")
        return
    data = answer.to_json()
    if as_json:
        emit_json(data)
    else:
        _print(data)
    if provider_name is not None and answer.refused and data["phase"] != "complete":
        raise click.exceptions.Exit(EXIT_FAILED)  # the provider's sessions left tasks open


def _drive(
    options: InitOptions,
    provider_name: str | None,
    model: str | None,
    timeout_ms: int,
    as_json: bool,
) -> Answer:
    from active_memory.history_init import advance

    if provider_name is None:
        return advance(options)
    from active_memory.history_init.provider_driver import drive

    return drive(
        options, provider_name, model, timeout_ms / 1000, progress=None if as_json else click.echo
    )
