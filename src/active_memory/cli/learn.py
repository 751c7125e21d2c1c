"""``active-memory learn``: the queue of finished harness sessions that learning reviews.

``hooks install --learn`` makes each harness session's end queue it (:mod:`active_memory.learn`)
and start the worker; these commands show and steer the same queue: ``status`` lists every
session with its state, reason and the lessons it changed, ``run`` starts the worker here,
``queue FILE`` queues a session by hand (a harness with no session-end event, or one that
failed), ``config`` sets the daily cap (0 pauses learning: sessions stay queued), the settle time
and the excluded repositories.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from active_memory.bounded_input import regular_file_problem
from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    BoundedInt,
    emit_json,
    fail,
    store_json_command,
    store_path,
)
from active_memory.errors import ActiveMemoryError
from active_memory.harnesses import HARNESS_NAMES
from active_memory.learn.folder import (
    LearnConfig,
    LearnFolder,
    SessionState,
    learn_folder,
    learn_status,
)

__all__ = ["learn"]


@click.group()
def learn() -> None:
    """Learning that runs by itself: the sessions queued at their end, and the worker."""


def _folder(store: Path | None) -> LearnFolder:
    return learn_folder(Path(os.path.abspath(store_path(store))))


def _stamp(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def _shown(path: str) -> str:
    home = os.path.expanduser("~").rstrip("/")
    return "~" + path[len(home) :] if home and path.startswith(home + "/") else path


PAUSED = (
    "learning is paused (daily cap 0): sessions stay queued until `active-memory learn config "
    "--daily-cap N` sets a cap above 0"
)


def status_lines(states: list[SessionState], *, paused: bool = False) -> list[str]:
    """``learn status`` as text: whether learning is paused, then one line per session and its
    reason or lessons indented."""
    lines = [PAUSED] if paused else []
    if not states:
        return [
            *lines,
            "no sessions queued yet: `active-memory hooks install --harness NAME --learn` "
            "queues each session as it ends",
        ]
    for state in states:
        lines.append(
            f"{_stamp(state.updated_ms)}  {state.state:<8} {state.harness:<8} "
            f"{_shown(state.session_file)}"
        )
        if state.code or state.reason:
            lines.append(f"    {state.code}: {state.reason}")
        if state.lessons:
            lines.append(f"    {len(state.lessons)} lesson(s) changed:")
            lines += [
                f"      {lesson.op:<7} {lesson.id}  {lesson.title or ''}".rstrip()
                for lesson in state.lessons
            ]
        elif state.state == "done":
            lines.append("    no lesson changed")
    return lines


@learn.command("status")
@store_json_command
def status_command(store: Path | None, as_json: bool) -> None:
    """List the queued, running, done, skipped and failed sessions, newest first (and say so
    when learning is paused)."""
    folder = _folder(store)
    states = learn_status(folder)
    # The list is shown even when the settings file is broken: it is what to look at then.
    try:
        settings: LearnConfig | None = folder.config()
        problem = None
    except ActiveMemoryError as error:
        settings, problem = None, str(error)
    paused = settings is not None and settings.daily_cap == 0
    if as_json:
        config = None if settings is None else settings.model_dump(mode="json")
        emit_json({"folder": str(folder.path), "config": config, "config_problem": problem,
                   "paused": paused,
                   "sessions": [s.model_dump(mode="json") for s in states]})  # fmt: skip
        return
    click.echo("\n".join(status_lines(states, paused=paused)))


def _config(folder: LearnFolder) -> LearnConfig:
    try:
        return folder.config()
    except ActiveMemoryError as error:
        fail(str(error), EXIT_BAD_INPUT)


@learn.command("config")
@click.option(
    "--daily-cap",
    type=BoundedInt(0, 10_000),
    help="Postmortems a day at most (UTC days; 0 pauses learning).",
)
@click.option(
    "--settle-seconds",
    type=click.FloatRange(0, 86_400),
    help="How long a session file must stay unchanged before it is reviewed.",
)
@click.option(
    "--ignore-repos",
    multiple=True,
    metavar="NAME",
    help="Never queue sessions of this repository (folder name, path or key, as "
    "memory init matches them); repeatable, replaces the list.",
)
@click.option("--clear-ignore-repos", is_flag=True, help="Empty the list of ignored repositories.")
@store_json_command
def config_command(
    daily_cap: int | None,
    settle_seconds: float | None,
    ignore_repos: tuple[str, ...],
    clear_ignore_repos: bool,
    store: Path | None,
    as_json: bool,
) -> None:
    """Show or set the daily cap, the settle time and the ignored repositories."""
    folder = _folder(store)
    config = _config(folder)
    changes: dict[str, object] = {}
    if daily_cap is not None:
        changes["daily_cap"] = daily_cap
    if settle_seconds is not None:
        changes["settle_seconds"] = settle_seconds
    if ignore_repos or clear_ignore_repos:
        changes["ignore_repos"] = () if clear_ignore_repos else tuple(dict.fromkeys(ignore_repos))
    if changes:
        config = LearnConfig.parse_json(json.dumps({**config.model_dump(mode="json"), **changes}))
        folder.save_config(config)
    if as_json:
        emit_json(config.model_dump(mode="json"))
        return
    ignored = ", ".join(config.ignore_repos) or "none"
    cap = (
        "0: learning is paused, sessions stay queued"
        if config.daily_cap == 0
        else f"{config.daily_cap} postmortem(s) a day (UTC)"
    )
    click.echo(
        f"daily cap        {cap}\n"
        f"settle time      {config.settle_seconds:g} s\n"
        f"ignored repos    {ignored}\n"
        f"folder           {folder.path}"
    )


@learn.command("queue")
@click.argument("session", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--harness",
    type=click.Choice(HARNESS_NAMES),
    help="The harness that wrote SESSION (default: told by its content).",
)
@store_json_command
def queue_command(session: Path, harness: str | None, store: Path | None, as_json: bool) -> None:
    """Queue a finished session file for the worker (`learn run` reviews it)."""
    from active_memory.errors import RunRecordError
    from active_memory.evidence.sources import detect_harness
    from active_memory.learn import session_end

    path = session.resolve()
    # Only a regular file: a FIFO or a device would hold the worker (and its lock) forever.
    problem = regular_file_problem(path)
    if problem is not None:
        fail(f"the session file {str(session)!r} {problem}", EXIT_BAD_INPUT)
    if harness is None:
        try:
            harness = detect_harness(path)
        except RunRecordError as error:
            fail(f"{error}; name the harness with --harness", EXIT_BAD_INPUT)
    folder = _folder(store)
    folder.make()
    payload: dict[str, object] = {"reason": "queued by hand"}
    name = session_end.write_entry(str(folder.path), harness, str(path), payload)
    key = name.removesuffix(session_end.ENTRY_SUFFIX)
    if as_json:
        emit_json({"key": key, "harness": harness, "session_file": str(path)})
        return
    click.echo(f"queued: {_shown(str(path))} ({harness}); `active-memory learn run` reviews it")


@learn.command("run")
@click.option(
    "--no-wait",
    is_flag=True,
    help="Leave sessions that have not settled queued instead of waiting for them.",
)
@click.option("--quiet", is_flag=True, help="Print nothing when another worker is running.")
@store_json_command
def run_command(no_wait: bool, quiet: bool, store: Path | None, as_json: bool) -> None:
    """Review the queued sessions now (one worker at a time; another running: exit 0)."""
    from active_memory.learn.review import PostmortemReviewer
    from active_memory.learn.worker import run_worker

    database = Path(os.path.abspath(store_path(store)))
    folder = learn_folder(database)
    config = _config(folder)
    reviewer = PostmortemReviewer(database, ignore_repos=config.ignore_repos)
    try:
        done = run_worker(folder, reviewer, wait=not no_wait)
    except ActiveMemoryError as error:
        fail(str(error), EXIT_FAILED)
    if done is None:
        if not quiet:
            click.echo("another learn worker is running; it reviews the queue")
        return
    handled = {state: len(keys) for state, keys in sorted(done.handled.items())}
    if as_json:
        emit_json({"handled": handled})
        return
    counts = ", ".join(f"{count} {state}" for state, count in handled.items()) or "nothing queued"
    click.echo(f"learn worker: {counts}; `active-memory learn status` lists them")
