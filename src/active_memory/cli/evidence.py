"""``active-memory evidence RUN``: show what a postmortem specialist would receive."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click

from active_memory.bounded_input import read_json
from active_memory.cli._common import BoundedInt, check_run_path
from active_memory.cli.spellings import RenamedOption
from active_memory.errors import EvidenceError, InputRefused, RunRecordError
from active_memory.evidence.builder import (
    DEFAULT_BUDGET,
    MIN_BUDGET,
    SPECIALISTS,
    EvidenceBundle,
    build_evidence,
)
from active_memory.evidence.sources import HARNESSES, open_run_source

__all__ = ["evidence", "harness_option"]

harness_option = click.option(
    "--harness",
    type=click.Choice(HARNESSES),
    help="Read RUN as this harness's session file instead of telling the format by content.",
)

MAX_LESSONS_BYTES = 16 * 1024 * 1024


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _lessons(path: Path | None) -> list[Mapping[str, Any]]:
    if path is None:
        return []
    try:
        data = read_json(path, what=f"--lessons {str(path)!r}", max_bytes=MAX_LESSONS_BYTES)
    except InputRefused as refused:
        _fail(f"{refused}; pass a JSON list of lesson cards", 2)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        _fail(f"--lessons {str(path)!r} must hold a JSON list of lesson card objects", 2)
    return data


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
    help="JSON list of supplied lesson cards (for the maintenance specialists).",
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
    lessons = _lessons(lessons_file)
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
