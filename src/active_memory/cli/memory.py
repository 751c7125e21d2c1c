"""``active-memory memory init``: learn lessons from every finished local run, resumably.

One command, called again and again with the same ``--directory`` from any folder: the first
call inventories the runs and exports tasks; each later call imports the responses written
since and exports what is next, until ``phase: complete`` returns the publication receipt.
``--provider NAME`` answers the tasks with this project's specialists instead of the host
agent's subagents. Exit codes: 0 the call advanced (or the session is complete); 1 it was
stopped (a changed checkout, another call holding the session) or ``--provider`` left tasks
open; 2 bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    BoundedInt,
    emit_json,
    json_option,
    store_option,
    store_path,
)
from active_memory.errors import ActiveMemoryError

__all__ = ["memory"]


@click.group("memory")
def memory() -> None:
    """Memory-wide workflows (initialisation from local history)."""


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
    staged = data["staged"]
    if any(staged.values()):
        click.echo(
            f"findings     {staged['staged']} staged, {staged['kept']} kept, "
            f"{staged['deferred']} deferred"
        )
    for note in data["notes"]:
        click.echo(f"note         {note}")
    receipt = data["receipt"]
    if receipt is not None:
        created, retired = len(receipt["created"]), len(receipt["retired"])
        adapted = len(receipt["revisions"]) - created - retired
        click.echo(
            f"receipt      generation {receipt['generation']}: {created} created, {adapted} "
            f"adapted, {retired} retired, {len(receipt['deferred'])} deferred"
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
    "--directory",
    required=True,
    type=click.Path(path_type=Path),
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
@store_option
@json_option
def init(
    directory: Path,
    ignore_repos: tuple[str, ...],
    ignore_graphs: tuple[str, ...],
    provider_name: str | None,
    model: str | None,
    timeout_ms: int,
    store: Path | None,
    as_json: bool,
) -> None:
    """Initialise memory from every finished local run, in one resumable session at DIRECTORY.

    Each call answers the phase and the next action: answer the open tasks (write each task's
    response.json), then call again with the same --directory.
    """
    from active_memory.history_init import InitOptions, InitRefused, advance
    from active_memory.history_init.advance import parse_ignore
    from active_memory.history_init.inventory import saved_runs_dir

    options = InitOptions(
        directory=directory,
        store=store_path(store),
        ignore_repos=parse_ignore(ignore_repos),
        ignore_graphs=parse_ignore(ignore_graphs),
        saved_runs=saved_runs_dir(),
    )
    try:
        if provider_name is not None:
            from active_memory.history_init.provider_driver import drive

            answer = drive(
                options,
                provider_name,
                model,
                timeout_ms / 1000,
                progress=None if as_json else click.echo,
            )
        else:
            answer = advance(options)
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
