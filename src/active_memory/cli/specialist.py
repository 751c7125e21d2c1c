"""``active-memory specialist``: one postmortem specialist on its own, for prompt authors.

``specialist run NAME RUN`` runs one session of one specialist and never publishes; it prints
the session whatever its outcome. ``prompt`` (what the model would receive) and ``eval`` (many
runs, before and after an edit) live in modules of their own, loaded when they run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import click

from active_memory.agents.prompts import SPECIALISTS
from active_memory.cli._common import (
    EXIT_FAILED,
    BoundedInt,
    emit_json,
    grouped_options,
    json_option,
    store_option,
)
from active_memory.cli.authoring import (
    Authoring,
    authored,
    authoring_options,
    finish_provider,
    replay_hint,
    supplied_lessons,
    wrap_provider,
)
from active_memory.cli.evidence import harness_option
from active_memory.cli.lazy import Lazy, LazyGroup
from active_memory.cli.postmortem import (
    _prepare,
    binding_options,
    check_base_url,
    exchanges_option,
    lessons_file_option,
    review_options,
    run_argument,
    runtime_option,
)

if TYPE_CHECKING:
    from active_memory.postmortem.binding import BindingOverride
    from active_memory.postmortem.specialist_trial import TrialResult

__all__ = ["SessionInputs", "session_options", "specialist"]


@click.group(
    "specialist",
    cls=LazyGroup,
    lazy={
        "eval": Lazy("active_memory.cli.specialist_eval:eval_command",
                     "Run specialist NAME on every RUN: one row each; with --baseline, what "
                     "changed."),
        "prompt": Lazy("active_memory.cli.specialist_prompt:prompt_command",
                       "Print specialist NAME's system prompt and first message for RUN, as the "
                       "model gets them."),
    },
)  # fmt: skip
def specialist() -> None:
    """Run one postmortem specialist on its own (for prompt authors)."""


@dataclass(frozen=True, slots=True)
class SessionInputs:
    """What a command about one specialist session reads beside RUN and its model, as
    :func:`session_options` takes it."""

    store: Path | None
    runtime: Path | None
    batch: int
    lessons_file: Path | None
    authoring: Authoring
    as_json: bool

    @contextlib.contextmanager
    def scratch(self, prefix: str) -> Iterator[Path]:
        """The session's private scratch folder, the author's folders in force meanwhile."""
        with authored(self.authoring), tempfile.TemporaryDirectory(prefix=prefix) as scratch:
            yield Path(scratch)

    def review_store(self, scratch: Path) -> Path | None:
        """The store the session reads: ``--lessons``'s lessons put in a store in ``scratch``,
        else ``--store``."""
        if self.lessons_file is None:
            return self.store
        return supplied_lessons(self.lessons_file, scratch / "supplied.sqlite3")


def session_options(batch_help: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """What a command about one specialist session takes after its model options: ``--store``,
    ``--runtime``, ``--batch`` (``batch_help`` says what it picks), ``--lessons``, the
    authoring options and ``--json``, in that order, handed over as one ``session``."""
    batch_option = click.option(
        "--batch", type=BoundedInt(min=0), default=0, show_default=True, help=batch_help
    )
    options = (store_option, runtime_option, batch_option, lessons_file_option,
               authoring_options, json_option)  # fmt: skip
    names = {field.name: field.name for field in fields(SessionInputs)}
    return grouped_options("session", SessionInputs, names, options)


def _print_trial(result: TrialResult) -> None:
    click.echo(f"specialist   {result.specialist} (batch {result.batch} of {result.batches})")
    click.echo(f"prompt       sha256 {result.prompt_sha256}")
    click.echo(f"contract     sha256 {result.contract_sha256}")
    lane = f"/{result.lane}" if result.lane and result.lane != result.provider else ""
    where = f" at {result.host}" if result.host else ""
    output = f", answer as {result.output}" if result.output else ""
    answered = ""
    if result.answered_model and result.answered_model != result.model:
        answered = f" (the server answered as {result.answered_model})"
    click.echo(f"model        {result.provider}{lane} {result.model}{where}{output}{answered}")
    # Shown only when some were: most servers return every call as a call.
    as_text = f" ({result.text_calls} call(s) written as text)" if result.text_calls else ""
    click.echo(
        f"session      {result.turns} turn(s), {result.tool_calls} tool call(s){as_text}, "
        f"tokens {result.input_tokens}/{result.output_tokens}, {result.retries} retr"
        f"{'y' if result.retries == 1 else 'ies'}, {'repaired' if result.repaired else 'no repair'}"
    )
    click.echo(
        f"output caps  {result.investigation_max_tokens} tokens a turn investigating, "
        f"{result.answer_max_tokens} answering"
    )
    click.echo("answer" if result.answer_json is not None else "answer       (none)")
    if result.answer_json is not None:
        try:
            shown = json.dumps(json.loads(result.answer_json), indent=2, ensure_ascii=False)
        except ValueError:
            shown = result.answer_json  # not JSON: exactly what the model wrote
        click.echo(shown)
    if result.error is not None:
        click.echo(f"failed       {result.status} ({result.error_code}): {result.error}")
        for error in result.contract_errors:
            click.echo(f"  error      {error}")
        return
    verdict = "accepted" if result.complete else "REFUSED as a whole"
    click.echo(f"validation   {verdict}: {result.accepted} item(s) accepted, "
               f"{len(result.rejections)} rejected")  # fmt: skip
    for error in result.contract_errors:  # malformed items, each refused alone below
        click.echo(f"  error      {error}")
    for note in result.notes:
        click.echo(f"note         {note}")
    for rejection in result.rejections:
        which = f"item {rejection.index}" if rejection.index >= 0 else "answer"
        lesson = f" {rejection.id}" if rejection.id else ""
        click.echo(f"  {rejection.stage:<12} {rejection.code:<32} {which}{lesson}")


@specialist.command("run")
@click.argument("name", type=click.Choice(SPECIALISTS))
@run_argument
@harness_option
@binding_options
@exchanges_option
@click.option(
    "--timeout-ms", type=BoundedInt(1, 600_000), help="The session's deadline (timeoutMs)."
)
@session_options("Which maintenance batch (its replay label).")
def run_specialist_command(
    name: str,
    run: Path,
    harness: str | None,
    override: BindingOverride,
    exchanges: Path | None,
    timeout_ms: int | None,
    session: SessionInputs,
) -> None:
    """Run specialist NAME once on RUN: print its raw answer, its admission and the hashes.

    The session is printed whatever its outcome (turns, tool calls, tokens, output caps,
    retries, repair, the raw answer, and what a repair turn that timed out was repairing);
    ``--timeout-ms`` overrides the runtime's timeoutMs. The exit code is 1 when the session
    failed or its answer was refused as a whole. Maintenance reads its lessons from the store;
    nothing is ever published.
    """
    from active_memory.postmortem.specialist_trial import try_specialist

    check_base_url(override)
    with session.scratch("active-memory-specialist-") as scratch:
        record, config, provider = _prepare(
            run, scratch, session.runtime, timeout_ms, override, exchanges, harness=harness
        )
        provider = wrap_provider(provider, session.authoring, record)
        store = session.review_store(scratch)
        with review_options(store, scratch, config, provider, override) as options:
            result = asyncio.run(try_specialist(record, name, options, batch=session.batch))
        finish_provider(provider)
    if session.as_json:
        emit_json(result.model_dump(mode="json"))
    else:
        _print_trial(result)
    replay_hint([result.error_code])
    if not result.complete:
        raise click.exceptions.Exit(EXIT_FAILED)
