"""``active-memory runlog summary FILE…``: what the run logs of many postmortems say.

Reads each run log (torn lines skipped and counted), keeps records at or after ``--since``, and
prints one row per admission stage, rejection code, specialist, or specialist and prompt
version (``--by``). Exit 2 for a file that cannot be read or a bad date.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from active_memory.cli._common import EXIT_BAD_INPUT, emit_json, fail, json_option
from active_memory.errors import RunLogError
from active_memory.runlog import LogValue, read_run_log
from active_memory.runlog_summary import GROUPINGS, Grouping, Summary, summarize

__all__ = ["runlog"]


@click.group("runlog")
def runlog() -> None:
    """Read postmortem run logs."""


def _since_ms(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        fail(f"--since {text!r} is not a date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM", EXIT_BAD_INPUT)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _print(summary: Summary, files: int) -> None:
    torn = f", {summary.torn} torn line(s) skipped" if summary.torn else ""
    click.echo(f"read         {files} file(s), {summary.records} record(s){torn}")
    statuses = ", ".join(f"{status} {count}" for status, count in summary.postmortems.items())
    click.echo(f"postmortems  {sum(summary.postmortems.values())} over {summary.runs} run(s)"
               + (f": {statuses}" if statuses else ""))  # fmt: skip
    if not summary.rows:
        click.echo(f"by {summary.by:<9} nothing recorded")
        return
    if summary.by in ("stage", "code"):
        click.echo(f"  {summary.by:<40} rejections")
        for row in summary.rows:
            click.echo(f"  {row.key:<40} {row.rejections:>10}")
        return
    click.echo(f"  {summary.by:<40} {'runs':>8} {'accepted':>8} {'rejected':>8} "
               f"{'tokens in/out':>15} {'cached':>8} {'time':>9}  errors")  # fmt: skip
    for row in summary.rows:
        tokens = f"{row.input_tokens}/{row.output_tokens}"
        errors = ", ".join(f"{code} {n}" for code, n in sorted(row.errors.items())) or "-"
        cached = row.cache_read_tokens
        click.echo(f"  {row.key:<40} {row.sessions:>8} {row.accepted:>8} {row.rejected:>8} "
                   f"{tokens:>15} {cached:>8} {row.duration_ms:>6} ms  {errors}")  # fmt: skip


@runlog.command("summary")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))  # fmt: skip
@click.option("--since", metavar="DATE", help="Only records at or after DATE (ISO, UTC unless "
              "it names a zone).")  # fmt: skip
@click.option("--by", "by", type=click.Choice(GROUPINGS), default="stage", show_default=True,
              help="Rows per admission stage, rejection code, specialist, or specialist and "
              "prompt sha256.")  # fmt: skip
@json_option
def summary_command(
    files: tuple[Path, ...], since: str | None, by: Grouping, as_json: bool
) -> None:
    """Summarize the run logs FILE… of many postmortems."""
    since_ms = _since_ms(since)
    records: list[dict[str, LogValue]] = []
    torn = 0
    for file in files:
        try:
            read = read_run_log(file)
        except RunLogError as error:
            fail(str(error), EXIT_BAD_INPUT)
        records.extend(read.records)
        torn += read.torn
    summary = summarize(records, by=by, since_ms=since_ms, torn=torn)
    if as_json:
        emit_json({"files": [str(f) for f in files], **summary.to_dict()})
        return
    _print(summary, len(files))
