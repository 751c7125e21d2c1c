"""``active-memory postmortem RUN``, and the run options and preparation that the
``specialist`` commands (:mod:`active_memory.cli.specialist`) share with it.

The postmortem reviews a recorded run (a native record folder, its run.json, or a session file
of Claude Code, Codex, pi or Copilot CLI) and publishes what admission accepts into the lesson
store. ``--provider replay`` answers from ``RUN/exchanges.jsonl``; otherwise the source node's
binding chooses the provider (``--provider``/``--model`` override it, and ``--lane``/
``--base-url``/``--api-key-env``/``--output`` say where its traffic goes, by the library's own
policy:
:class:`~active_memory.postmortem.binding.BindingOverride`).

Exit codes: 0 the postmortem completed (or was skipped); 1 a specialist failed, timed out,
conflicted or publication was refused; 2 bad input (record, runtime, sourceNode, options).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlsplit

import click

from active_memory.bounded_input import regular_file_problem
from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    BoundedInt,
    check_run_path,
    emit_json,
    fail,
    json_option,
    open_store,
    team_store_option,
)
from active_memory.cli._report_text import format_report, progress_printer
from active_memory.cli.authoring import (
    Authoring,
    authored,
    authoring_options,
    finish_provider,
    ids_option,
    lesson_ids,
    replay_hint,
    wrap_provider,
)
from active_memory.cli.evidence import harness_option
from active_memory.errors import (
    ActiveMemoryError,
    ConfigError,
    HarnessUnavailable,
    PostmortemError,
    ReplayMismatch,
    RunRecordError,
)
from active_memory.evidence.sources import open_run_source
from active_memory.lanes import LANE_OPTION_NAMES
from active_memory.models.config import RuntimeConfig, load_runtime_config, parse_runtime_config
from active_memory.models.runs import RUN_FILE, Outcome, RunRecord
from active_memory.runlog import RunLog

if TYPE_CHECKING:
    from active_memory.agents.providers.base import ModelProvider
    from active_memory.postmortem.binding import BindingOverride
    from active_memory.postmortem.options import PostmortemOptions
    from active_memory.store.admin_backend import AdminBackend

# The postmortem (jsonschema, git, the provider layer) is imported inside the commands, so every
# other command starts without it.

__all__ = ["postmortem"]

OutcomeStatus = Literal["succeeded", "failed", "cancelled"]
EXCHANGES = "exchanges.jsonl"


def _exchanges(run: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    if run.is_dir():
        return run / EXCHANGES
    if run.name == RUN_FILE:
        return run.parent / EXCHANGES
    return run.with_name(run.stem + "." + EXCHANGES)


def _record_config(record: RunRecord) -> RuntimeConfig:
    """The record's embedded runtime JSON, without its connection entries (said once)."""
    config = parse_runtime_config(record.runtime)
    declared = ", ".join(repr(name) for name in sorted(config.postmortem.connections))
    if declared:
        click.echo(
            f"warning: the record declares connection(s) {declared} in its runtime JSON; they "
            "are ignored (a record never chooses where traffic goes): pass --runtime FILE to "
            "declare connections",
            err=True,
        )
    return config.without_connections()


def _config(record: RunRecord, runtime: Path | None, timeout_ms: int | None) -> RuntimeConfig:
    """``--runtime FILE``, else the record's own runtime JSON, whose connections are ignored."""
    config = load_runtime_config(runtime) if runtime else _record_config(record)
    if timeout_ms is not None:
        postmortem = config.postmortem.model_copy(update={"timeout_ms": timeout_ms})
        config = config.model_copy(update={"postmortem": postmortem})
    return config


def _with_outcome(record: RunRecord, outcome: str | None) -> RunRecord:
    """A Claude Code session has no latched outcome: ``--outcome`` latches one for it."""
    if outcome is None:
        return record
    if record.outcome is not None:
        if record.outcome.status != outcome:
            raise PostmortemError(
                f"the record already latched outcome {record.outcome.status!r}; a latched "
                "outcome is final, drop --outcome"
            )
        return record
    status = cast(OutcomeStatus, outcome)
    now_ms = int(time.time() * 1000)
    latched = Outcome(status=status, latched_ms=now_ms, summary="latched by the CLI")
    return record.model_copy(update={"outcome": latched})


def _prepare(
    run: Path, scratch: Path, runtime: Path | None, timeout_ms: int | None,
    override: BindingOverride, exchanges: Path | None, outcome: str | None = None,
    harness: str | None = None,
) -> tuple[RunRecord, RuntimeConfig, ModelProvider]:  # fmt: skip
    """Parse the inputs; every problem here is bad input (exit 2) except a missing credential.

    The provider is built here, before any work, so a bad recording or a missing credential is
    one sentence on stderr rather than a report of failed specialists.
    """
    from active_memory.postmortem.binding import (
        REPLAY,
        declared_connections,
        provider_for,
        resolve_source_node,
        specialist_binding,
    )

    check_run_path(run)
    try:
        record = _with_outcome(open_run_source(run, scratch / "record", harness), outcome)
        config = _config(record, runtime, timeout_ms)
        node = resolve_source_node(record.graph, config.postmortem.source_node)
        recording = _exchanges(run, exchanges) if override.provider == REPLAY else None
        if recording is not None and os.path.lexists(recording):
            problem = regular_file_problem(recording)
            if problem is not None:  # a FIFO would hold the replay's first read for good
                fail(f"recording {str(recording)!r} {problem}", EXIT_BAD_INPUT)
        provider = provider_for(
            specialist_binding(node, override),
            recording,
            connections=declared_connections(config.postmortem),
            connection=override.connection(),
        )
    except (RunRecordError, ConfigError, PostmortemError, ReplayMismatch) as error:
        fail(str(error), EXIT_BAD_INPUT)
    except HarnessUnavailable as error:
        # A harness lane's CLI that is missing or too old: fixed by the command it names.
        fail(str(error), EXIT_BAD_INPUT)
    except ActiveMemoryError as error:
        fail(str(error), EXIT_FAILED)
    return record, config, provider


def check_base_url(override: BindingOverride) -> None:
    """Refuse, exit 2, a --base-url that is no http(s) URL with a host, or that carries
    credentials."""
    base_url = override.base_url
    if base_url is None:
        return
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail(f"--base-url {base_url!r} must be an http(s) URL with a host", EXIT_BAD_INPUT)
    if parts.username or parts.password:
        fail("--base-url must not carry credentials; name the key variable with "
             "--api-key-env", EXIT_BAD_INPUT)  # fmt: skip


@contextlib.contextmanager
def review_options(
    store: Path | str | None,
    scratch: Path,
    config: RuntimeConfig,
    provider: ModelProvider,
    override: BindingOverride | None = None,
    *,
    ids: str | None = None,
    prefix: str = "",
    bad_input: tuple[type[ActiveMemoryError], ...] = (PostmortemError,),
    **given: Any,
) -> Iterator[PostmortemOptions]:
    """The options of one review from the command line: ``store`` opened for it, the private
    evidence folder in ``scratch``, ``provider``, ``override`` (None: the binding as inherited),
    new lesson ids as ``ids`` says (see :func:`~.authoring.lesson_ids`) and the rest as
    ``given``. A ``bad_input`` error inside (a PostmortemError: a bad sourceNode, specialist or
    batch) exits 2, any other library error 1, with a message that starts with ``prefix``."""
    from active_memory.postmortem.options import PostmortemOptions

    if override is not None:
        given["override"] = override
    try:
        with open_store(store, read_only=False) as opened:
            if ids is not None:
                given["new_id"] = lesson_ids(ids, _taken_ids(opened))
            yield PostmortemOptions(
                config=config,
                backend=opened,
                private_dir=scratch / "evidence",
                provider=provider,
                **given,
            )
    except bad_input as error:
        fail(f"{prefix}{error}", EXIT_BAD_INPUT)
    except ActiveMemoryError as error:
        fail(f"{prefix}{error}", EXIT_FAILED)


run_argument = click.argument("run", type=click.Path(exists=True, path_type=Path))
provider_option = click.option(
    "--provider",
    help="replay (answers from RUN/exchanges.jsonl), or a provider name such as anthropic or "
    "openai. Default: the source node's binding.",
)
model_option = click.option("--model", help="Override the inherited model.")


# The options binding_options gathers, each named as the BindingOverride field it sets.
_OVERRIDE_FIELDS = ("provider", "model", "lane", "base_url", "api_key_env", "output", "text_calls")


def binding_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--provider``, ``--model`` and the connection options, handed to ``command`` as one
    ``override`` argument (a :class:`~active_memory.postmortem.binding.BindingOverride`; the
    command checks it with :func:`check_base_url` where its bad input is reported)."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        from active_memory.postmortem.binding import BindingOverride

        given = {name: kwargs.pop(name) for name in _OVERRIDE_FIELDS}
        command(override=BindingOverride(**given), **kwargs)

    return provider_option(model_option(connection_options(wrapper)))


def connection_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--lane``, ``--base-url``, ``--api-key-env``, ``--output`` and ``--text-calls``: where
    the specialists' traffic goes, with which credential and how replies are read, never
    derived from names in the record."""
    options = (
        click.option(
            "--lane",
            type=click.Choice(LANE_OPTION_NAMES),
            help="The API lane (it names its provider): e.g. compatible for an "
            "OpenAI-compatible server; or a harness lane (claude-code: the harness's own CLI "
            "and login run the specialists).",
        ),
        click.option(
            "--base-url",
            help="The server's API root, e.g. http://127.0.0.1:8080/v1. "
            "Only --api-key-env's key is sent there (none without it).",
        ),
        click.option(
            "--api-key-env",
            metavar="NAME",
            help="The environment variable holding the API key for --base-url or the lane.",
        ),
        click.option(
            "--output",
            type=click.Choice(["tool", "native", "prompted"]),
            help="How the answer is asked for (default: the lane's).",
        ),
        click.option(
            "--text-calls/--no-text-calls",
            default=None,
            help="Take a reply that is only a tool call written as JSON text as that call "
            "(default: on for the compatible lane, off elsewhere).",
        ),
    )
    for option in reversed(options):
        command = option(command)
    return command


exchanges_option = click.option(
    "--exchanges",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Recording for --provider replay (default: RUN/exchanges.jsonl).",
)
runtime_option = click.option(
    "--runtime",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Runtime JSON with activeMemory/globalAgents (default: the record's runtime, without "
    "its connections).",
)
lessons_file_option = click.option(
    "--lessons",
    "lessons_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A `lessons export` file: the lessons maintenance reviews, instead of the store's.",
)


def _check_run_log(run_log: Path | None) -> None:
    """Refuse, exit 2 before any work, a run log that exists and is not a regular file: opening
    a FIFO for append waits for a reader, and the log is written after the review."""
    if run_log is None or not os.path.lexists(run_log):
        return
    problem = regular_file_problem(run_log, follow_symlinks=False)
    if problem is not None:
        fail(f"--run-log {str(run_log)!r} {problem} or a new path", EXIT_BAD_INPUT)


@click.command("postmortem")
@run_argument
@harness_option
@binding_options
@exchanges_option
@team_store_option
@click.option("--timeout-ms", type=BoundedInt(1, 600_000), help="Shared deadline (timeoutMs).")
@runtime_option
@click.option("--dry-run", is_flag=True, help="Do everything but publish.")
@click.option(
    "--outcome",
    type=click.Choice(["succeeded", "failed", "cancelled"]),
    help="Latch this outcome for a record that has none (a Claude Code session).",
)
@click.option(
    "--run-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the report's allow-listed fields and rejections to this JSONL run log.",
)
@ids_option
@authoring_options
@json_option
def postmortem(
    run: Path,
    harness: str | None,
    override: BindingOverride,
    exchanges: Path | None,
    store: Path | str | None,
    timeout_ms: int | None,
    runtime: Path | None,
    dry_run: bool,
    outcome: str | None,
    run_log: Path | None,
    ids: str,
    authoring: Authoring,
    as_json: bool,
) -> None:
    """Review a recorded RUN with the four specialists and publish the lessons admitted.

    RUN is a run record folder (or its run.json) or a session file of Claude Code, Codex, pi or
    Copilot CLI (told by its content; --harness forces one).
    """
    from active_memory.agents.providers.replay import ReplayProvider
    from active_memory.postmortem.entry import run_postmortem

    _check_run_log(run_log)
    check_base_url(override)
    with (
        authored(authoring),
        tempfile.TemporaryDirectory(prefix="active-memory-postmortem-") as scratch,
    ):
        record, config, provider = _prepare(
            run, Path(scratch), runtime, timeout_ms, override, exchanges, outcome, harness
        )
        provider = wrap_provider(provider, authoring, record)
        with review_options(
            store,
            Path(scratch),
            config,
            provider,
            override,
            ids=ids,
            run_log=RunLog(run_log) if run_log is not None else None,
            dry_run=dry_run,
            on_progress=progress_printer(not as_json),
        ) as options:
            report = asyncio.run(run_postmortem(record, options))
        finish_provider(provider)
    # A skipped postmortem requests nothing by design: its leftovers say nothing about the file.
    skipped = report.status == "skipped"
    replayed = getattr(provider, "inner", provider)
    if isinstance(replayed, ReplayProvider) and replayed.leftovers() and not skipped:
        click.echo(
            f"warning: {len(replayed.leftovers())} recorded exchange(s) were never requested",
            err=True,
        )
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        click.echo("\n".join(format_report(report)))
    replay_hint(s.error_code for s in report.specialists)
    if not report.ok:
        raise click.exceptions.Exit(EXIT_FAILED)


def _taken_ids(opened: AdminBackend) -> list[str]:
    return [lesson.id for lesson in opened.list_lessons()] + [
        tombstone.id for tombstone in opened.list_retired()
    ]
