"""``active-memory specialist prompt NAME RUN``: what the model receives, without calling it.

Prints the rendered system prompt (whose last section is the answer contract), the first message
(host facts and the evidence payload) and the investigation tools exactly as a provider receives
them, after ``--prompts``/``--contracts`` overrides, so a prompt author reads the session before
spending a token. When a postmortem would not start the specialist on this run, a note on stderr
says why.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from active_memory.agents.prompts import SPECIALISTS
from active_memory.cli._common import EXIT_BAD_INPUT, emit_json, fail
from active_memory.cli.postmortem import review_options, run_argument
from active_memory.cli.specialist import SessionInputs, session_options
from active_memory.errors import ConfigError, PostmortemError, RunRecordError

__all__ = ["prompt_command"]


@click.command("prompt")
@click.argument("name", type=click.Choice(SPECIALISTS))
@run_argument
@session_options("Which maintenance batch.")
def prompt_command(name: str, run: Path, session: SessionInputs) -> None:
    """Print specialist NAME's system prompt and first message for RUN, as the model gets them."""
    from active_memory.evidence.sources import open_run_source
    from active_memory.models.config import load_runtime_config, parse_runtime_config
    from active_memory.postmortem.specialist_preview import NoModelCalls, preview_specialist

    runtime = session.runtime
    with session.scratch("active-memory-prompt-") as scratch:
        try:
            record = open_run_source(run, scratch / "record")
            config = (
                load_runtime_config(runtime) if runtime else parse_runtime_config(record.runtime)
            )
        except (RunRecordError, ConfigError) as error:
            fail(str(error), EXIT_BAD_INPUT)
        store = session.review_store(scratch)
        with review_options(
            store, scratch, config, NoModelCalls(), bad_input=(PostmortemError, ConfigError)
        ) as options:
            shown = asyncio.run(preview_specialist(record, name, options, batch=session.batch))
    if session.as_json:
        emit_json(
            {
                "specialist": shown.specialist,
                "batch": shown.batch,
                "batches": shown.batches,
                "prompt_sha256": shown.prompt_sha256,
                "contract_sha256": shown.contract_sha256,
                "tools": list(shown.tools),
                "tool_specs": list(shown.tool_specs),
                "skipped_reason": shown.skipped_reason,
                "system": shown.system,
                "prompt": shown.prompt,
            }
        )
        return
    if shown.skipped_reason is not None:
        click.echo(f"note: a postmortem would skip {shown.specialist}: {shown.skipped_reason}",
                   err=True)  # fmt: skip
    click.echo(f"== system prompt of {shown.specialist} (prompt sha256 {shown.prompt_sha256}, "
               f"contract sha256 {shown.contract_sha256})")  # fmt: skip
    click.echo(shown.system)
    click.echo(f"== first message (batch {shown.batch} of {shown.batches}; "
               f"tools {', '.join(shown.tools)})")  # fmt: skip
    click.echo(shown.prompt, nl=False)
    click.echo("\n== tools (name, description, JSON Schema parameters)")
    click.echo(json.dumps(list(shown.tool_specs), indent=2, sort_keys=True))
