"""``active-memory demo``: the main job end to end, offline, with no key.

Two recorded runs of a small order service are unpacked into DIR (a new temporary folder by
default), their checkouts made real git repositories, and their postmortems replayed from the
recorded model answers into a fresh store. The command prints each report, the lessons published,
and what a tool call on a lesson's file would receive afterwards.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from active_memory.cli._common import EXIT_BAD_INPUT, EXIT_FAILED, emit_json, fail, json_option
from active_memory.cli._report_text import format_lessons, format_report, progress_printer
from active_memory.errors import ActiveMemoryError

if TYPE_CHECKING:
    from active_memory.demo import DemoResult

__all__ = ["demo"]


def _print(result: DemoResult) -> None:
    click.echo(f"demo folder  {result.directory}")
    click.echo(f"store        {result.store}")
    for number, step in enumerate(result.steps, start=1):
        click.echo()
        click.echo(f"== postmortem {number}: {step.name} run, checkout commit {step.commit[:12]}")
        click.echo("\n".join(format_report(step.report)))
        click.echo()
        click.echo(f"-- live lessons after postmortem {number}: {len(step.lessons)}")
        click.echo("\n".join(format_lessons(step.lessons)))
    click.echo()
    click.echo(f"== what a Read of {result.recall_file} in the latest checkout receives now")
    click.echo(
        f"$ active-memory recall --repository {result.checkout} --file {result.recall_file} "
        f"--store {result.store}"
    )
    click.echo(result.recall_text or "(nothing matched)")
    click.echo()
    # The demo's runs sit in its folder, not in a host's runs folder beside the store: name it.
    click.echo("== what each lesson has done, and a local browser over the same")
    click.echo(f"$ active-memory lessons stats --store {result.store} --runs {result.directory}")
    click.echo(f"$ active-memory ui --store {result.store} --runs {result.directory}")


def _json(result: DemoResult) -> dict[str, object]:
    return {
        "directory": str(result.directory),
        "store": str(result.store),
        "steps": [
            {
                "name": step.name,
                "commit": step.commit,
                "report": step.report.model_dump(mode="json"),
                "lessons": [lesson.model_dump(mode="json") for lesson in step.lessons],
            }
            for step in result.steps
        ],
        "recall": {
            "file": result.recall_file,
            "text": result.recall_text,
            "report": result.recall_report.to_dict(),
        },
    }


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to unpack the runs and create the store (default: a new temporary folder).",
)
@json_option
def demo(directory: Path | None, as_json: bool) -> None:
    """Replay two recorded postmortems into a fresh store and show the lessons and recall."""
    if directory is None:
        directory = Path(tempfile.mkdtemp(prefix="active-memory-demo-"))
    elif directory.exists() and any(directory.iterdir()):
        fail(f"--dir {str(directory)!r} is not empty; choose a new or empty folder", EXIT_BAD_INPUT)
    # Imported here so other commands do not pay for git, jsonschema and the agents on start.
    from active_memory.demo import run_demo

    try:
        result = asyncio.run(run_demo(directory, on_progress=progress_printer(not as_json)))
    except ActiveMemoryError as error:
        fail(str(error), EXIT_FAILED)
    if as_json:
        emit_json(_json(result))
    else:
        _print(result)
    if not all(step.report.ok for step in result.steps):
        raise click.exceptions.Exit(EXIT_FAILED)
