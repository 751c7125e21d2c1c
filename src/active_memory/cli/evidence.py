"""``active-memory evidence RUN``: show what a postmortem specialist would receive."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click

from active_memory.bounded_input import parse_json, read_text
from active_memory.cli._common import BoundedInt, check_run_path
from active_memory.cli.spellings import RenamedOption
from active_memory.errors import EvidenceError, InputRefused, LessonValidationError, RunRecordError
from active_memory.evidence.builder import (
    DEFAULT_BUDGET,
    MIN_BUDGET,
    SPECIALISTS,
    EvidenceBundle,
    build_evidence,
)
from active_memory.evidence.sources import open_run_source
from active_memory.harnesses import HARNESS_NAMES

__all__ = ["evidence", "harness_option"]

harness_option = click.option(
    "--harness",
    type=click.Choice(HARNESS_NAMES),
    help="Read RUN as this harness's session file instead of telling the format by content.",
)

MAX_LESSONS_BYTES = 16 * 1024 * 1024


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _lessons(path: Path | None, kind: str) -> list[Mapping[str, Any]]:
    """``--lessons``: a ``lessons export`` file, as ``specialist run`` takes; its live lessons of
    the specialist's ``kind`` of scope are the ones maintenance reviews. A JSON list of lesson
    cards, what it took before, is still read as it is for one release, with a warning."""
    if path is None:
        return []
    from active_memory.models.lessons import Lesson
    from active_memory.store.transfer import parse_lines

    what = f"--lessons {str(path)!r}"
    try:
        text = read_text(path, what=what, max_bytes=MAX_LESSONS_BYTES)
        if text.lstrip().startswith("["):  # an export holds one JSON object a line
            click.echo("warning: --lessons with a JSON list is deprecated; give a `lessons "
                       "export` file", err=True)  # fmt: skip
            data = parse_json(text, what=what)
            if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
                _fail(f"{what} must hold a JSON list of lesson card objects", 2)
            return data
        entries = parse_lines(text.splitlines())
    except InputRefused as refused:
        _fail(f"{refused}; give a `lessons export` file", 2)
    except LessonValidationError as error:
        _fail(f"{what} {error}; give a `lessons export` file", 2)
    return [Lesson.from_draft(entry.id, entry.revision, entry.draft).model_dump(mode="json")
            for entry in entries if entry.draft is not None and entry.kind == kind]  # fmt: skip


def _summary(bundle: EvidenceBundle, private: str) -> list[str]:
    payload = bundle.payload
    run = payload["run"]
    outcome = run.get("outcome")
    excerpts = {item["execution"]: item for item in payload.get("transcripts", [])}
    lines = [
        f"run          {run['run_id']} (graph {run['graph_name']!r}, {run['graph_hash'][:12]})",
        f"outcome      {outcome['status'] if outcome else 'none latched'}",
        f"specialist   {bundle.specialist}",
        f"evidence     {bundle.size_bytes} of {bundle.truncation.budget_bytes} bytes",
        f"executions   {run['executions_total']} ({len(payload['executions'])} listed)",
    ]
    for item in payload["executions"]:
        excerpt = excerpts.get(item["ref"])
        kept = ""
        if "transcripts" in payload:
            kept = (
                f"{len(excerpt['records'])}/{excerpt['records_total']} records"
                if excerpt
                else "no transcript"
            )
        lines.append(
            f"  {item['ref']:<24} {item['node']:<16} occurrence {item['occurrence']} "
            f"attempt {item['attempt']} {item['status']:<9} {kept}".rstrip()
        )
    left_out = payload.get("executions_left_out")
    if left_out:
        counts = ", ".join(f"{node} {count}" for node, count in left_out.items())
        lines.append(f"  left out: {counts}")
    if "receipts" in payload:
        lines.append(f"receipts     {len(payload['receipts'])} of {run['receipts_total']}")
    if "lessons" in payload:
        lines.append(f"lessons      {len(payload['lessons'])} supplied")
    lines.append(f"private      {', '.join(sorted(payload['private_files'].values()))} {private}")
    lines.append(f"truncated    {'yes' if bundle.truncation.truncated else 'no'}")
    for cut in bundle.truncation.cuts:
        refs = ", ".join(cut.refs[:4]) + (" …" if len(cut.refs) > 4 or cut.more_refs else "")
        lines.append(f"  - {cut.section}: {cut.count} ({cut.reason}){f' [{refs}]' if refs else ''}")
    return lines


@click.command("evidence")
@click.argument("run", type=click.Path(exists=True, path_type=Path))
@harness_option
@click.option(
    "--specialist",
    type=click.Choice(sorted(SPECIALISTS)),
    default="repository_discovery",
    show_default=True,
)
@click.option(
    "--budget",
    type=BoundedInt(min=MIN_BUDGET),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="Serialized evidence budget in bytes.",
)
@click.option(
    "--lessons",
    "lessons_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A `lessons export` file: the lessons maintenance reviews.",
)
@click.option(
    "--dir",
    "private_dir",
    cls=RenamedOption,
    old="--private-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the private files (graph, runtime) in this folder instead of a temporary one.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the evidence payload as JSON.")
def evidence(
    run: Path,
    harness: str | None,
    specialist: str,
    budget: int,
    lessons_file: Path | None,
    private_dir: Path | None,
    as_json: bool,
) -> None:
    """Print the evidence a postmortem specialist would receive about RUN.

    RUN is a run record folder (or its run.json) or a session file of Claude Code, Codex, pi or
    Copilot CLI (told by its content; --harness forces one).
    """
    check_run_path(run)
    lessons = _lessons(lessons_file, SPECIALISTS[specialist].scope)
    with tempfile.TemporaryDirectory(prefix="active-memory-evidence-") as scratch:
        try:
            record = open_run_source(run, Path(scratch) / "record", harness)
            bundle = build_evidence(
                record,
                specialist,
                private_dir=private_dir or Path(scratch) / "private",
                budget_bytes=budget,
                lessons=lessons,
            )
        except RunRecordError as exc:
            _fail(str(exc), 2)
        except EvidenceError as exc:
            _fail(str(exc), 1)
    if as_json:
        click.echo(bundle.serialized)
        return
    where = f"in {str(private_dir)!r}" if private_dir else "(temporary, removed on exit)"
    click.echo("\n".join(_summary(bundle, where)))
