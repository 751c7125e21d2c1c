"""``active-memory lessons``: list, show, history, export, import, revert, purge.

``review``, ``retire``, ``stats`` and ``impact`` belong to the group too; they live in modules
of their own and load when they run.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

import click

from active_memory.bounded_input import decode_utf8, read_bytes, read_stream
from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    BoundedInt,
    binary_stdin,
    emit_json,
    expected_option,
    fail,
    lesson_id_argument,
    open_store,
    reports_errors,
    store_path,
    team_store_json_command,
    team_store_option,
)
from active_memory.cli.lazy import Lazy, LazyGroup
from active_memory.cli.lesson_search import searched
from active_memory.cli.spellings import (
    RenamedOption,
    checkout_key,
    chosen_repository,
    repository_key_option,
)
from active_memory.errors import ActiveMemoryError, InputRefused
from active_memory.limits import LIMITS
from active_memory.models.lessons import GraphScope, Lesson, LessonDraft, Scope
from active_memory.store.results import HistoryEntry, ImportReport

if TYPE_CHECKING:
    from active_memory.store.zeroshot import ZeroshotCards

__all__ = ["lessons"]

# Above the largest export a store within its default limits can produce (64 MiB of content
# plus ids, revisions and tombstones).
MAX_IMPORT_BYTES = 256 * 1024 * 1024


@click.group(
    cls=LazyGroup,
    lazy={
        "impact": Lazy("active_memory.cli.lesson_impact:impact_command",
                       "Does a lesson help? Failures on each lesson's files in recorded runs, "
                       "whether its card came first, and the repeat rate with and without it."),
        "retire": Lazy("active_memory.cli.retire:retire_command",
                       "Retire lesson ID: a checked publication that tombstones it at its current "
                       "revision."),
        "review": Lazy("active_memory.cli.review:review",
                       "Proposals held in quarantine by weak screening signals, for a person to "
                       "decide."),
        "stats": Lazy("active_memory.cli.lesson_stats:stats_command",
                      "What each lesson has done: deliveries, runs and their outcomes, "
                      "maintenance decisions and the admission of every revision."),
    },
)  # fmt: skip
def lessons() -> None:
    """Read and administer stored lessons."""


def _scope_label(scope: Scope) -> str:
    if isinstance(scope, GraphScope):
        qualifier = f" @ {scope.repository}" if scope.repository else ""
        return f"{scope.graph_hash[:12]}…/{scope.node_id}{qualifier}"
    return scope.repository


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@lessons.command("list")
@click.option(
    "--repository",
    metavar="CHECKOUT",
    callback=checkout_key,
    help="Only lessons of the repository of this checkout folder.",
)
@repository_key_option(
    "Only lessons of this repository key (forge:host/owner/repo, local:<hex>, …)."
)
@click.option("--graph", "graph_hash", help="Only graph lessons of this graph hash.")
@click.option("--node", "node_id", help="Only graph lessons of this node id.")
@click.option(
    "--search",
    metavar="WORDS",
    help="Only lessons whose title or recommendation has every word (each as a word's start).",
)
@click.option("--retired", is_flag=True, help="List tombstones (retired ids) instead.")
@team_store_json_command
def list_command(
    repository: str | None,
    repository_key: str | None,
    graph_hash: str | None,
    node_id: str | None,
    search: str | None,
    retired: bool,
    store: Path | str | None,
    as_json: bool,
) -> None:
    """List live lessons sorted by id."""
    repository = chosen_repository(repository, repository_key)
    if retired and search is not None:
        raise click.BadParameter(
            "the search reads live lessons only; drop --search or --retired", param_hint="--search"
        )
    with open_store(store, read_only=True) as opened:
        if retired:
            tombstones = opened.list_retired()
            if as_json:
                emit_json([t.model_dump(mode="json") for t in tombstones])
                return
            for tombstone in tombstones:
                click.echo(f"{tombstone.id}  {tombstone.revision:>4}  {tombstone.kind}")
            click.echo(f"{len(tombstones)} retired")
            return
        found = opened.list_lessons(repository, graph_hash, node_id)
        if search is not None:
            found, note = searched(opened, found, search)
            if note is not None:
                click.echo(f"note: {note}", err=True)
    if as_json:
        emit_json([lesson.model_dump(mode="json") for lesson in found])
        return
    if found:
        click.echo(f"{'ID':<33} {'REV':>4}  {'KIND':<10}  {'SCOPE':<34}  TITLE")
    for lesson in found:
        click.echo(
            f"{lesson.id:<33} {lesson.revision:>4}  {lesson.scope.kind:<10}  "
            f"{_clip(_scope_label(lesson.scope), 34):<34}  {_clip(lesson.title, 60)}"
        )
    # Name the filters: a checkout's key is derived, so "0 live lessons" must say of what.
    filters = (("repository", repository), ("graph", graph_hash), ("node", node_id),
               ("search", search and repr(search)))  # fmt: skip
    chosen = [f"{label} {value}" for label, value in filters if value]
    among = f" ({', '.join(chosen)})" if chosen else ""
    click.echo(f"{len(found)} live lesson{'' if len(found) == 1 else 's'}{among}")


def _card_lines(draft: LessonDraft) -> list[str]:
    scope = draft.scope
    lines = [f"title           {draft.title}", f"recommendation  {draft.recommendation}"]
    if isinstance(scope, GraphScope):
        lines += [
            f"graph           {scope.graph_hash}",
            f"node            {scope.node_id}",
            f"repository      {scope.repository or '(any)'}",
        ]
    else:
        lines.append(f"repository      {scope.repository}")
        groups = " | ".join(" ".join(group) for group in scope.keyword_groups)
        for label, values in (
            ("files", ", ".join(scope.files)),
            ("folders", ", ".join(scope.folders)),
            ("identifiers", ", ".join(scope.identifiers)),
            ("keywords", groups),
        ):
            if values:
                lines.append(f"{label:<15} {values}")
    evidence = draft.evidence
    lines += [
        "evidence (kept apart, never injected)",
        f"  run           {evidence.run_id}",
        f"  references    {', '.join(evidence.references)}",
        f"  reason        {evidence.reason}",
        f"  source commit {evidence.source_commit or '-'}",
    ]
    return lines


@lessons.command("show")
@lesson_id_argument
@team_store_json_command
def show_command(lesson_id: str, store: Path | str | None, as_json: bool) -> None:
    """Show one live lesson: its card and its evidence."""
    with open_store(store, read_only=True) as opened:
        lesson: Lesson = opened.get(lesson_id)
    if as_json:
        emit_json(lesson.model_dump(mode="json"))
        return
    click.echo(f"{lesson.id} @ revision {lesson.revision} ({lesson.scope.kind} lesson)")
    for line in _card_lines(lesson.draft):
        click.echo(line)


def _history_note(entry: HistoryEntry) -> str:
    if entry.op == "retire":
        return "(retired)"
    if entry.op == "purge":
        return "(past contents purged)"
    if entry.draft is None:
        return "(content erased by purge)"
    source = f"[from r{entry.source_revision}] " if entry.source_revision else ""
    return source + _clip(entry.draft.title, 60)


@lessons.command("history")
@lesson_id_argument
@team_store_json_command
def history_command(lesson_id: str, store: Path | str | None, as_json: bool) -> None:
    """Every revision of a lesson, oldest first."""
    with open_store(store, read_only=True) as opened:
        entries = opened.history(lesson_id)
    if as_json:
        emit_json([entry.model_dump(mode="json") for entry in entries])
        return
    click.echo(f"{'REV':>4}  {'OP':<7} {'GEN':>5}  {'TIME':<24}  {'RUN':<20}  CONTENT")
    for entry in entries:
        click.echo(
            f"{entry.revision:>4}  {entry.op:<7} {entry.generation:>5}  {entry.time:<24}  "
            f"{_clip(entry.run_id, 20):<20}  {_history_note(entry)}"
        )


@lessons.command("export")
@team_store_option
@reports_errors
def export_command(store: Path | str | None) -> None:
    """Write every live lesson and tombstone as JSON lines on stdout, sorted by id."""
    with open_store(store, read_only=True) as opened:
        lines = list(opened.export())
    for line in lines:
        click.echo(line)


def _read_lines(source: str) -> list[str]:
    """The lines of FILE (``-``: standard input) through the bounded reader: a FIFO or a device
    is refused before it is opened, a file over the limit before it is read."""
    try:
        if source == "-":
            what = "standard input"
            data = read_stream(binary_stdin(), what=what, max_bytes=MAX_IMPORT_BYTES)
        else:
            what = repr(source)
            data = read_bytes(source, what=what, max_bytes=MAX_IMPORT_BYTES)
        # A byte-order mark from a Windows editor is harmless.
        text = decode_utf8(data, what=what, allow_bom=True)
    except InputRefused as refused:
        hint = ""
        if "UTF-8" in refused.problem:
            hint = "; export lessons with `active-memory lessons export`"
        fail(f"{refused}{hint}", EXIT_BAD_INPUT)
    return text.split("\n")


@lessons.command("import")
@click.argument("source", metavar="FILE", required=False)
@click.option(
    "--from-zeroshot",
    "zeroshot",
    metavar="PATH",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Read a zeroshot CLI store (read-only) instead of FILE; see docs/store.md.",
)
@click.option(
    "--replace", is_flag=True, help="Overwrite live lessons whose content differs (new revision)."
)
@team_store_json_command
def import_command(
    source: str | None,
    zeroshot: Path | None,
    replace: bool,
    store: Path | str | None,
    as_json: bool,
) -> None:
    """Import JSON lines from FILE (`-` for stdin): validated first, then all or nothing.

    Identical lessons are skipped; retired ids are never recreated; live lessons with different
    content are conflicts unless --replace. Cards admission would refuse (a secret, a planted
    instruction) refuse the whole file.

    With --from-zeroshot PATH, the lessons of a zeroshot CLI store are read without writing to
    it; each card that cannot be taken is reported (id and why) and the rest are imported.
    """
    if (source is None) == (zeroshot is None):
        fail(
            "give either FILE (an `active-memory lessons export`) or --from-zeroshot PATH",
            EXIT_BAD_INPUT,
        )
    # The import's parser and the zeroshot reader bring the screens (~0.1 s of imports): loaded
    # here, so the reading commands of this group do not pay for them.
    from active_memory.store.transfer import parse_lines
    from active_memory.store.zeroshot import read_zeroshot_store

    cards = None
    if zeroshot is not None:
        cards = read_zeroshot_store(zeroshot)
        lines = list(cards.lines)
    else:
        assert source is not None
        lines = _read_lines(source)
        # Validate before opening: a bad file must not create the state directory or a store.
        parse_lines(lines)
    report = None
    if lines:
        with open_store(store, read_only=False) as opened:
            run_id = "import" if cards is None else "zeroshot-import"
            report = opened.import_lines(lines, replace=replace, run_id=run_id)
    if cards is not None:
        _zeroshot_report(cards, report, as_json)
        return
    assert report is not None
    if as_json:
        emit_json(report.model_dump(mode="json"))
        return
    click.echo(_import_summary(report))


def _import_summary(report: ImportReport) -> str:
    return (
        f"imported: {len(report.created)} created, {len(report.replaced)} replaced, "
        f"{len(report.retired)} retired, {len(report.unchanged)} unchanged; "
        f"generation {report.generation}"
    )


def _zeroshot_report(cards: ZeroshotCards, report: ImportReport | None, as_json: bool) -> None:
    if as_json:
        emit_json({**(report.model_dump(mode="json") if report else {}), **cards.to_dict()})
        return
    click.echo(_import_summary(report) if report else "imported: nothing (no card could be taken)")
    for old, new in cards.renamed:
        click.echo(f"renamed: {old} -> {new}")
    for item in cards.not_taken:
        click.echo(item.line())
    taken = len(cards.lines)
    click.echo(
        f"zeroshot store {str(cards.path)!r}: {taken} of {taken + len(cards.not_taken)} "
        "records taken; it was read only, never written"
    )


@lessons.command("revert")
@lesson_id_argument
@click.option("--to", "to_revision", type=BoundedInt(1, LIMITS.revision_max), required=True)
@expected_option("Fail unless the lesson is still at this revision.")
@team_store_json_command
def revert_command(
    lesson_id: str, to_revision: int, expected: int | None, store: Path | str | None, as_json: bool
) -> None:
    """Publish an old revision's content as a new revision."""
    with open_store(store, read_only=False) as opened:
        receipt = opened.revert(lesson_id, to_revision, expected_revision=expected)
    revision = receipt.revisions[lesson_id]
    if as_json:
        emit_json(
            {
                "id": lesson_id,
                "revision": revision,
                "generation": receipt.generation,
                "source_revision": to_revision,
            }
        )
        return
    click.echo(
        f"{lesson_id} now at revision {revision} with the content of revision {to_revision}; "
        f"generation {receipt.generation}"
    )


@lessons.command("purge")
@lesson_id_argument
@click.option("--force", cls=RenamedOption, old="--yes", is_flag=True,
              help="Erase without asking for confirmation.")  # fmt: skip
@team_store_json_command
def purge_command(lesson_id: str, force: bool, store: Path | str | None, as_json: bool) -> None:
    """Erase every past content of a retired lesson for good (e.g. a leaked secret)."""
    if not force:
        click.confirm(
            f"Erase every past revision's content of retired lesson {lesson_id}? "
            "This cannot be undone",
            abort=True,
        )
    with open_store(store, read_only=False) as opened:
        receipt = opened.purge(lesson_id)
    kept = _forget_copies(store, lesson_id)  # with --json too: the warnings go to stderr
    if as_json:
        emit_json(receipt.model_dump(mode="json"))
    else:
        click.echo(
            f"{lesson_id}: content of {receipt.erased_revisions} revision(s) erased; tombstone "
            f"at revision {receipt.revision}; generation {receipt.generation}"
        )
        if not receipt.scrubbed:
            click.echo(f"warning: {_unscrubbed(store)}", err=True)
    for warning in kept:
        click.echo(f"warning: {warning}", err=True)


def _forget_copies(store: Path | str | None, lesson_id: str) -> list[str]:
    """Remove the copies of the purged lesson's text kept on this machine outside the store;
    a warning for each place where some could not be removed. The recall index files (one
    kept while the lesson was live holds its text, and nothing may ever come to replace it):
    those run starts keep in the state folder and, beside a store file, those the hook
    fallback caches for each workspace. Beside a store file too: the temporaries killed
    backups left (each a copy of the store) and the lesson's title in the learn folder, where
    the session whose postmortem published it keeps it."""
    from active_memory.hooks.index_cache import cache_folder
    from active_memory.learn.folder import learn_folder
    from active_memory.recall.index_file import FOLDER, forget_kept
    from active_memory.store.backup import sweep_stale_backups
    from active_memory.store.paths import default_store_path

    folders: list[Path] = []
    with suppress(ActiveMemoryError):  # no state folder to be found: no run start kept a file
        folders.append(default_store_path().parent / FOLDER)
    learn = None
    if not isinstance(store, str):  # a store file; a team store's URL keeps nothing here
        path = store_path(store)
        folders.append(Path(cache_folder(os.path.abspath(path))))
        sweep_stale_backups(path)
        learn = learn_folder(path)
    warnings = [
        f"the recall index files kept in {folder} could not all be removed and may still hold "
        "the lesson's text; delete them (they are built again when needed)"
        for folder in folders
        if not forget_kept(folder)
    ]
    if learn is not None and not learn.forget_title(lesson_id):
        warnings.append(
            f"the session states in {learn.sessions} could not all be rewritten and may still "
            "hold the lesson's title"
        )
    return warnings


def _unscrubbed(store: Path | str | None) -> str:
    """Where a purged or rejected content may still linger, and what removes it."""
    if isinstance(store, str):
        return (
            "PostgreSQL keeps the old row versions in its files until VACUUM reclaims them; "
            "run VACUUM on the tenant's tables (or ask the service's operator to)"
        )
    return (
        "another process holds the store open, so old pages may remain in its write-ahead log "
        "until the next checkpoint; run the command again when it is idle"
    )
