"""``active-memory lessons review``: list, show, approve or reject quarantined proposals.

A discovered lesson that tripped only weak screening signals (a random-looking string, a
download that is not run, a credential file read without a destination, a shell start-up file,
a word mixing scripts) waits in the store's quarantine. ``approve`` publishes it through the
store's checked publication (screened again first: a strong signal refuses the approval);
``reject`` deletes it and scrubs the store file, so no card content is left behind. ``--store``
takes a file, a ``postgresql://`` URL or the memory service's URL: every store keeps its
quarantine.
"""

from __future__ import annotations

from pathlib import Path

import click

from active_memory.cli._common import (
    emit_json,
    lesson_id_argument,
    open_store,
    team_store_json_command,
)
from active_memory.cli.lessons import _card_lines, _clip
from active_memory.store.quarantine import REVIEW_RUN, QuarantineEntry

__all__ = ["review"]


def _as_json(entry: QuarantineEntry) -> dict[str, object]:
    return {
        "id": entry.id,
        "run_id": entry.run_id,
        "role": entry.role,
        "signals": list(entry.signals),
        "time": entry.time,
        "draft": entry.draft.model_dump(mode="json"),
    }


@click.group("review")
def review() -> None:
    """Proposals held in quarantine by weak screening signals, for a person to decide."""


@review.command("list")
@team_store_json_command
def list_command(store: Path | str | None, as_json: bool) -> None:
    """List quarantined proposals, oldest first."""
    with open_store(store, read_only=True) as opened:
        entries = opened.held()
    if as_json:
        emit_json([_as_json(entry) for entry in entries])
        return
    if entries:
        click.echo(f"{'ID':<33} {'KIND':<10}  {'ROLE':<20}  {'SIGNALS':<30}  TITLE")
    for entry in entries:
        click.echo(
            f"{entry.id:<33} {entry.draft.scope.kind:<10}  {entry.role:<20}  "
            f"{_clip(','.join(entry.signals), 30):<30}  {_clip(entry.draft.title, 50)}"
        )
    click.echo(f"{len(entries)} quarantined proposal{'' if len(entries) == 1 else 's'}")


@review.command("show")
@lesson_id_argument
@team_store_json_command
def show_command(lesson_id: str, store: Path | str | None, as_json: bool) -> None:
    """Show one quarantined proposal: why it was held, its card and its evidence."""
    with open_store(store, read_only=True) as opened:
        entry = opened.held_entry(lesson_id)
    if as_json:
        emit_json(_as_json(entry))
        return
    click.echo(f"{entry.id} (quarantined {entry.draft.scope.kind} proposal)")
    click.echo(f"signals         {', '.join(entry.signals)}")
    click.echo(f"proposed by     {entry.role} in run {entry.run_id} at {entry.time}")
    for line in _card_lines(entry.draft):
        click.echo(line)


@review.command("approve")
@lesson_id_argument
@team_store_json_command
def approve_command(lesson_id: str, store: Path | str | None, as_json: bool) -> None:
    """Publish a quarantined proposal as a live lesson (revision 1) through the checked
    publication; exit 1 when today's screens refuse it."""
    with open_store(store, read_only=False) as opened:
        receipt = opened.approve_held(lesson_id, run_id=REVIEW_RUN)
    revision = receipt.revisions[lesson_id]
    if as_json:
        emit_json({"id": lesson_id, "revision": revision, "generation": receipt.generation})
        return
    click.echo(
        f"approved {lesson_id}: live at revision {revision} (generation {receipt.generation})"
    )


@review.command("reject")
@lesson_id_argument
@team_store_json_command
def reject_command(lesson_id: str, store: Path | str | None, as_json: bool) -> None:
    """Delete a quarantined proposal and scrub the store file of its content."""
    with open_store(store, read_only=False) as opened:
        scrubbed = opened.reject_held(lesson_id)
    if as_json:
        emit_json({"id": lesson_id, "rejected": True, "scrubbed": scrubbed})
        return
    note = ""
    if not scrubbed and isinstance(store, str):
        note = " (PostgreSQL keeps the old row version until VACUUM reclaims it)"
    elif not scrubbed:
        note = " (a reader kept old pages; run `active-memory store check` later)"
    click.echo(f"rejected {lesson_id}: its content was erased{note}")
