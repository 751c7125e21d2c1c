"""``active-memory lessons retire ID``: retire one lesson through the checked publication.

The retirement is an ordinary one-mutation batch: it names the revision it expects (the live
store's current one, or ``--expected N``), so a lesson that changed since it was read is a
revision conflict and nothing is written. The id becomes a tombstone that can never be
recreated; ``lessons history`` keeps its past revisions until ``lessons purge``.
"""

from __future__ import annotations

from pathlib import Path

import click

from active_memory.cli._common import (
    emit_json,
    expected_option,
    lesson_id_argument,
    open_store,
    team_store_json_command,
)
from active_memory.models.changes import Mutation, Publication

__all__ = ["retire_command"]

RUN_ID = "cli-retire"


@click.command("retire")
@lesson_id_argument
@expected_option("Fail with a conflict unless the lesson is still at this revision.")
@team_store_json_command
def retire_command(
    lesson_id: str, expected: int | None, store: Path | str | None, as_json: bool
) -> None:
    """Retire lesson ID: a checked publication that tombstones it at its current revision."""
    with open_store(store, read_only=False) as opened:
        revision = expected if expected is not None else opened.get(lesson_id).revision
        publication = Publication(
            run_id=RUN_ID,
            mutations=(Mutation(op="retire", id=lesson_id, expected_revision=revision),),
        )
        receipt = opened.publish(publication)
    if as_json:
        emit_json(
            {
                "id": lesson_id,
                "retired_revision": revision,
                "revision": receipt.revisions.get(lesson_id),
                "generation": receipt.generation,
            }
        )
        return
    click.echo(
        f"{lesson_id} retired at revision {revision} (tombstone revision "
        f"{receipt.revisions.get(lesson_id)}); generation {receipt.generation}"
    )
