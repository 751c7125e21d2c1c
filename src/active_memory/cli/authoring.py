"""Options prompt authors add to ``postmortem`` and ``specialist run``.

``--record FILE`` writes every model exchange (any provider) to a recording; a replay is strict
unless ``--allow-changed``; ``--prompts DIR`` / ``--contracts DIR`` (or ``ACTIVE_MEMORY_PROMPTS``
/ ``ACTIVE_MEMORY_CONTRACTS``) take an edited copy of the package's ``prompts/`` or
``contracts/`` folder in place of the shipped one, and a contract ``contracts check`` flags is
refused before any work. The run's checkout path is recorded as
``$CHECKOUT``, so a run unpacked in another folder replays against the same recording.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from active_memory.admission import CONTRACTS
from active_memory.agents.prompts import PROMPT_NAMES, load_prompt
from active_memory.cli._common import EXIT_BAD_INPUT, fail, grouped_options
from active_memory.data_folders import Overrides, using_overrides
from active_memory.errors import ConfigError, PromptError
from active_memory.models.ids import new_lesson_id
from active_memory.models.runs import RunRecord

__all__ = [
    "Authoring",
    "authored",
    "authoring_options",
    "finish_provider",
    "ids_option",
    "lesson_ids",
    "replay_hint",
    "supplied_lessons",
    "wrap_provider",
]

PROMPTS_ENV = "ACTIVE_MEMORY_PROMPTS"
CONTRACTS_ENV = "ACTIVE_MEMORY_CONTRACTS"


@dataclass(frozen=True, slots=True)
class Authoring:
    record: Path | None = None
    allow_changed: bool = False
    prompts: Path | None = None
    contracts: Path | None = None


_FOLDER = click.Path(exists=True, file_okay=False, path_type=Path)


# The four options, handed to the command as one ``authoring`` argument.
authoring_options = grouped_options(
    "authoring",
    Authoring,
    {
        "record_file": "record",
        "allow_changed": "allow_changed",
        "prompts_dir": "prompts",
        "contracts_dir": "contracts",
    },
    (
        click.option(
            "--record",
            "record_file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Write every model exchange to this recording (JSONL), whatever the provider.",
        ),
        click.option(
            "--allow-changed",
            is_flag=True,
            help="Replay even when a request differs from the recording (warns).",
        ),
        click.option(
            "--prompts",
            "prompts_dir",
            type=_FOLDER,
            envvar=PROMPTS_ENV,
            help="An edited copy of the shipped prompts/ folder, used in its place "
            f"(${PROMPTS_ENV}).",
        ),
        click.option(
            "--contracts",
            "contracts_dir",
            type=_FOLDER,
            envvar=CONTRACTS_ENV,
            help="An edited copy of the shipped contracts/ folder, used in its place "
            f"(${CONTRACTS_ENV}).",
        ),
    ),
)


def _check_contracts(folder: Path) -> None:
    from active_memory.admission.check import check_contract

    for name in CONTRACTS:
        verdict = check_contract(name)
        if not verdict.ok:
            fail(
                f"contract {name!r} in {str(folder)!r} is refused: {verdict.problems[0]}; run "
                f"`active-memory contracts check {folder}` for every problem",
                EXIT_BAD_INPUT,
            )


@contextlib.contextmanager
def authored(authoring: Authoring, *, check: bool = True) -> Iterator[Overrides]:
    """The author's folders in force for the block, checked first: a folder that is not a copy
    of the shipped one (a file missing or unknown), a prompt that does not load or (unless
    ``check`` is off: ``contracts check`` reports them itself) a contract ``contracts check``
    flags is bad input (exit 2)."""
    overrides = Overrides(prompts=authoring.prompts, contracts=authoring.contracts)
    try:
        with using_overrides(overrides):
            if authoring.prompts is not None:
                for name in PROMPT_NAMES:
                    load_prompt(name)
            if authoring.contracts is not None and check:
                _check_contracts(authoring.contracts)
            yield overrides
    except (ConfigError, PromptError) as error:
        fail(str(error), EXIT_BAD_INPUT)


def locations(record: RunRecord) -> dict[str, str]:
    from active_memory.agents.providers.replay import CHECKOUT

    checkout = record.checkout
    return {str(checkout.path): CHECKOUT} if checkout is not None else {}


def wrap_provider(provider: Any, authoring: Authoring, record: RunRecord) -> Any:
    """A replay made strict (unless ``--allow-changed``), then wrapped in a recorder for
    ``--record``; both see the checkout path as ``$CHECKOUT``."""
    from active_memory.agents.providers.replay import RecordingProvider, ReplayProvider

    where = locations(record)
    if isinstance(provider, ReplayProvider):
        provider.strict = not authoring.allow_changed
        provider.locations = where
    if authoring.record is not None:
        return RecordingProvider(provider, authoring.record, locations=where)
    return provider


def replay_hint(codes: Iterable[str | None]) -> None:
    """After a strict replay refused a changed request: say how to go on."""
    if "replay_mismatch" in codes:
        click.echo(
            "hint: the recording no longer matches the requests; pass --allow-changed to replay "
            "it anyway, or --record FILE with a live provider to make a new one",
            err=True,
        )


def finish_provider(provider: Any) -> None:
    """Save a recording and warn about what a lenient replay found changed."""
    from active_memory.agents.providers.replay import RecordingProvider, ReplayProvider

    inner = provider.inner if isinstance(provider, RecordingProvider) else provider
    if isinstance(inner, ReplayProvider):
        for change in inner.changed:
            click.echo(f"warning: replayed anyway: {change}", err=True)
    if isinstance(provider, RecordingProvider):
        saved = provider.save()
        click.echo(f"recorded {provider.exchanges} exchange(s) to {saved}", err=True)


ids_option = click.option(
    "--ids",
    type=click.Choice(["random", "sequential"]),
    default="random",
    show_default=True,
    help="New lesson ids: random ULIDs, or sequential ones continuing after the store's own "
    "(reproducible: replaying the same runs into a fresh store gives the same ids).",
)


def lesson_ids(kind: str, taken: Iterable[str]) -> Callable[[], str]:
    """The id source ``--ids`` names: random ULIDs, or sequential ids continue
    after the highest sequential id the store holds, live or retired, so a second run's ids
    never collide with the first's."""
    if kind != "sequential":
        return new_lesson_id
    from active_memory.postmortem.entry import sequential_ids

    probe = sequential_ids()()
    prefix = probe[: len("lesson-") + 10]  # the fixed millisecond part of a ULID
    used = [_counter(lesson_id) for lesson_id in taken if lesson_id.startswith(prefix)]
    return sequential_ids(first=max(used, default=0) + 1)


def _counter(lesson_id: str) -> int:
    value = 0
    for char in lesson_id[len("lesson-") + 10 :]:
        value = value * 32 + _CROCKFORD.index(char)
    return value


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# An export of a few thousand lessons is a few MiB.
_MAX_LESSONS_BYTES = 32 * 1024 * 1024


def supplied_lessons(source: Path, destination: Path) -> Path:
    """A private store at ``destination`` holding exactly the lessons of export ``source``: what
    a maintenance specialist reviews with ``--lessons``, whatever the live store holds now."""
    from active_memory.errors import ActiveMemoryError
    from active_memory.store.sqlite import SqliteStore

    try:
        with open(source, "rb") as handle:
            data = handle.read(_MAX_LESSONS_BYTES + 1)
    except OSError as error:
        fail(f"--lessons {str(source)!r} cannot be read: {error.strerror}", EXIT_BAD_INPUT)
    if len(data) > _MAX_LESSONS_BYTES:
        fail(f"--lessons {str(source)!r} is larger than {_MAX_LESSONS_BYTES} bytes", EXIT_BAD_INPUT)
    try:
        lines = data.decode("utf-8").splitlines()
        with SqliteStore(destination) as store:
            store.import_lines(lines, run_id="supplied-lessons")
    except UnicodeDecodeError:
        fail(f"--lessons {str(source)!r} is not UTF-8 text", EXIT_BAD_INPUT)
    except ActiveMemoryError as error:
        fail(f"--lessons {str(source)!r}: {error}", EXIT_BAD_INPUT)
    return destination
