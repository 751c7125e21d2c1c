"""``active-memory specialist eval NAME RUN…``: one specialist over many runs, before and after.

Each RUN gets one row: status, items admitted, rejections by stage and code, maintenance
decisions, tokens and time. ``--provider``/``--model`` and the connection options choose the
model as for ``specialist run`` (``replay`` answers from each RUN's own recording, strictly
unless ``--allow-changed``); ``--prompts``/``--contracts`` put an author's edits in force.
``--record DIR`` writes each run's exchanges to ``DIR/<run>.jsonl``: a baseline for later.
``--baseline DIR`` replays ``DIR/<run>.jsonl`` with the shipped prompts and contracts and prints
what the edit changed: items admitted only after (+) or only before (-), rejections and reach; a
run or a baseline that failed is reported as not compared. ``reach`` is what the lessons a run's
answer would publish would have reached in the RUNs after it, in the order given: failures on
their files that recall, replaying those runs' tool calls, delivers them to first, of all such
failures (:mod:`active_memory.impact.learned`). The baseline replays with the model it
was recorded with. Nothing is ever published. Exit 1 when a run's session (or its baseline's)
failed or its answer was refused.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import click

from active_memory.agents.prompts import SPECIALISTS
from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    emit_json,
    fail,
    json_option,
    store_option,
)
from active_memory.cli.authoring import (
    CONTRACTS_ENV,
    PROMPTS_ENV,
    Authoring,
    authored,
    locations,
    supplied_lessons,
    wrap_provider,
)
from active_memory.cli.postmortem import (
    _prepare,
    binding_options,
    check_base_url,
    lessons_file_option,
    review_options,
    runtime_option,
)
from active_memory.models.runs import RUN_FILE
from active_memory.postmortem.specialist_eval import ACCEPTED

__all__ = ["eval_command"]

_FOLDER = click.Path(file_okay=False, path_type=Path)


def run_name(run: Path) -> str:
    """The name a run's recording has in a --record or --baseline folder."""
    if run.is_dir():
        return run.resolve().name
    return run.parent.resolve().name if run.name == RUN_FILE else run.stem


def _codes(rejections: Counter[str]) -> str:
    return ", ".join(f"{code} {n}" for code, n in sorted(rejections.items())) or "-"


def _reach(reach: Any) -> str:
    return "-" if reach is None else str(reach.cell)


def _print_rows(rows: list[Any]) -> None:
    click.echo(f"{'run':<16} {'status':<14} {'admitted':>8} {'reach':>7}  {'decisions':<24} "
               f"{'tokens in/out':>15} {'time':>9}  rejections")  # fmt: skip
    for row in rows:
        decisions = ", ".join(f"{a} {n}" for a, n in sorted(row.decisions.items())) or "-"
        tokens = f"{row.input_tokens}/{row.output_tokens}"
        click.echo(f"{row.run:<16} {row.status:<14} {len(row.admitted):>8} "
                   f"{_reach(row.reach):>7}  {decisions:<24} "
                   f"{tokens:>15} {row.elapsed_ms:>6} ms  {_codes(row.rejections)}")  # fmt: skip
        if row.error:
            click.echo(f"  error: {row.error}")


def _print_diffs(diffs: list[Any]) -> None:
    click.echo()
    click.echo("against the baseline")
    for diff in diffs:
        # A failed side admitted only what came before its failure: nothing to compare.
        if diff.status_before != ACCEPTED:
            click.echo(f"{diff.run}: not compared, the baseline ended {diff.status_before}: "
                       f"{diff.error_before}")  # fmt: skip
            continue
        if diff.status_after != ACCEPTED:
            click.echo(f"{diff.run}: not compared, the run ended {diff.status_after} "
                       "(its error is above)")  # fmt: skip
            continue
        if not diff.changed:
            click.echo(f"{diff.run}: no change")
            continue
        click.echo(f"{diff.run}:")
        for item in diff.added:
            click.echo(f"  + {item}")
        for item in diff.removed:
            click.echo(f"  - {item}")
        if diff.rejections_before != diff.rejections_after:
            click.echo(f"  rejections before: {_codes(diff.rejections_before)}")
            click.echo(f"  rejections after:  {_codes(diff.rejections_after)}")
        if _reach(diff.reach_before) != _reach(diff.reach_after):
            click.echo(f"  reach before: {_reach(diff.reach_before)}, "
                       f"after: {_reach(diff.reach_after)}")  # fmt: skip


@click.command("eval")
@click.argument("name", type=click.Choice(SPECIALISTS))
@click.argument("runs", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))  # fmt: skip
@binding_options
@store_option
@runtime_option
@lessons_file_option
@click.option("--baseline", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of baseline recordings DIR/<run>.jsonl to diff against.")  # fmt: skip
@click.option("--record", "record_dir", type=_FOLDER,
              help="Write each run's exchanges to DIR/<run>.jsonl (a later baseline).")  # fmt: skip
@click.option("--allow-changed", is_flag=True,
              help="Replay even when a request differs from the recording (warns).")  # fmt: skip
@click.option("--prompts", "prompts_dir", envvar=PROMPTS_ENV,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help=f"An edited copy of the shipped prompts/ folder (${PROMPTS_ENV}).")  # fmt: skip
@click.option("--contracts", "contracts_dir", envvar=CONTRACTS_ENV,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help=f"An edited copy of the shipped contracts/ folder "
                   f"(${CONTRACTS_ENV}).")  # fmt: skip
@json_option
def eval_command(
    name: str, runs: tuple[Path, ...], override: Any, store: Path | None,
    runtime: Path | None, lessons_file: Path | None, baseline: Path | None,
    record_dir: Path | None, allow_changed: bool, prompts_dir: Path | None,
    contracts_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Run specialist NAME on every RUN: one row each; with --baseline, what changed."""
    names = [run_name(run) for run in runs]
    if len(set(names)) != len(names):
        fail("two RUNs share a folder name; their recordings would collide", EXIT_BAD_INPUT)
    if baseline is not None:
        missing = [n for n in names if not (baseline / f"{n}.jsonl").is_file()]
        if missing:
            fail(f"--baseline {str(baseline)!r} has no {missing[0]}.jsonl; record one with "
                 f"`specialist eval {name} RUN --record {baseline}`", EXIT_BAD_INPUT)  # fmt: skip
    check_base_url(override)
    rows, diffs, records, befores = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="active-memory-eval-") as scratch:
        if lessons_file is not None:
            store = supplied_lessons(lessons_file, Path(scratch) / "supplied.sqlite3")
        for index, (run, label) in enumerate(zip(runs, names, strict=True)):
            work = Path(scratch) / str(index)
            authoring = Authoring(
                record=record_dir / f"{label}.jsonl" if record_dir is not None else None,
                allow_changed=allow_changed,
                prompts=prompts_dir,
                contracts=contracts_dir,
            )
            with authored(authoring):
                row, record = _evaluate(name, run, label, work / "after", override, store,
                                        runtime, authoring)  # fmt: skip
            rows.append(row)
            records.append(record)
            if baseline is not None:
                befores.append(
                    _baseline(name, run, label, work / "before", baseline, store, runtime)
                )
    rows = [_with_reach(row, records[i + 1 :]) for i, row in enumerate(rows)]
    for i, before in enumerate(befores):
        diffs.append(_compare(_with_reach(before, records[i + 1 :]), rows[i]))
    if as_json:
        shown = [d.to_dict() for d in diffs] if baseline is not None else None
        emit_json({"specialist": name, "runs": [r.to_dict() for r in rows], "diffs": shown})
    else:
        _print_rows(rows)
        if baseline is not None:
            _print_diffs(diffs)
    if any(row.status != ACCEPTED for row in rows) or any(diff.failed for diff in diffs):
        raise click.exceptions.Exit(EXIT_FAILED)


def _with_reach(row: Any, later: list[Any]) -> Any:
    from active_memory.postmortem.specialist_eval import with_reach

    return with_reach(row, later)


def _compare(before: Any, after: Any) -> Any:
    from active_memory.postmortem.specialist_eval import compare_rows

    return compare_rows(before, after)


def _run_one(name: str, run: Path, label: str, scratch: Path, provider: Any, record: Any,
             config: Any, override: Any, store: Path | None) -> Any:  # fmt: skip
    from active_memory.cli.authoring import finish_provider
    from active_memory.postmortem.specialist_eval import evaluate

    with review_options(store, scratch, config, provider, override, prefix=f"{label}: ") as options:
        row = asyncio.run(evaluate(label, record, name, options))
    finish_provider(provider)
    return row


def _evaluate(name: str, run: Path, label: str, scratch: Path, override: Any,
              store: Path | None, runtime: Path | None,
              authoring: Authoring) -> tuple[Any, Any]:  # fmt: skip
    """The row, and the run record (the reach of earlier rows replays it)."""
    scratch.mkdir(parents=True)
    record, config, provider = _prepare(run, scratch, runtime, None, override, None)
    provider = wrap_provider(provider, authoring, record)
    return _run_one(name, run, label, scratch, provider, record, config, override, store), record


def _baseline(name: str, run: Path, label: str, scratch: Path, folder: Path,
              store: Path | None, runtime: Path | None) -> Any:  # fmt: skip
    """The baseline row: the recorded answers, admitted with the shipped prompts and contracts
    (the recording was made before the edit, so its requests may differ: replayed anyway)."""
    from active_memory.agents.providers.replay import ReplayProvider
    from active_memory.postmortem.binding import BindingOverride

    scratch.mkdir(parents=True)
    recording = folder / f"{label}.jsonl"
    record, config, _ = _prepare(run, scratch, runtime, None, BindingOverride(provider="replay"),
                                 recording)  # fmt: skip
    provider = ReplayProvider(recording, locations=locations(record))
    # The requests name the model the baseline was recorded with (a --model then, whatever the
    # model now): replaying it as recorded is no "model changed".
    replay = BindingOverride(provider="replay", model=provider.model)
    return _run_one(name, run, label, scratch, provider, record, config, replay, store)
