"""``active-memory contracts``: ``check [DIR]`` that every specialist contract is strict Draft
2020-12 (an author's copy of the contracts/ folder in place of the shipped one); ``screen`` a
card's text with admission's card rules and screens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, NoReturn

import click

from active_memory.admission.source import Associations
from active_memory.cli._common import EXIT_BAD_INPUT, EXIT_FAILED, emit_json, fail, json_option
from active_memory.cli.spellings import RenamedOption

__all__ = ["contracts"]


@click.group("contracts")
def contracts() -> None:
    """The specialists' JSON answer contracts."""


@contracts.command("check")
@click.argument("folder", metavar="[DIR]", required=False,
                type=click.Path(exists=True, file_okay=False, path_type=Path))  # fmt: skip
@json_option
def check(folder: Path | None, as_json: bool) -> None:
    """Check that every contract is a strict Draft 2020-12 schema in the keyword subset both
    providers accept; print their sha256.

    With DIR, an edited copy of the shipped contracts/ folder, its files are checked in place of
    the shipped ones (what `--contracts DIR` would use). Exit 1 when any contract is not strict.
    """
    # Imported here: jsonschema is not worth loading for every other command.
    from active_memory.admission.check import check_contracts
    from active_memory.cli.authoring import Authoring, authored

    with authored(Authoring(contracts=folder), check=False):
        results = check_contracts()
    if as_json:
        emit_json([result.model_dump(mode="json") for result in results])
    else:
        for result in results:
            mark = "ok " if result.ok else "BAD"
            click.echo(f"{mark} {result.name:<24} sha256 {result.sha256}")
            for problem in result.problems:
                click.echo(f"    {problem}")
    if not all(result.ok for result in results):
        bad = ", ".join(result.name for result in results if not result.ok)
        click.echo(f"error: contract(s) {bad} are not strict Draft 2020-12 schemas", err=True)
        raise click.exceptions.Exit(EXIT_FAILED)


# A card file is small: the card contract's title, recommendation and associations.
MAX_CARD_FILE_BYTES = 64 * 1024
_ASSOCIATION_FIELDS = ("files", "folders", "identifiers")


def _bad(message: str) -> NoReturn:
    fail(message, EXIT_BAD_INPUT)


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        _bad(f"--card: {where} must be a list of strings")
    return tuple(value)


def _associations(value: object) -> Associations | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        _bad("--card: associations must be an object or null")
    unknown = sorted(set(value) - {*_ASSOCIATION_FIELDS, "keyword_groups"})
    if unknown:
        _bad(f"--card: associations has unknown field(s) {', '.join(unknown)}")
    groups = value.get("keyword_groups", [])
    if not isinstance(groups, list):
        _bad("--card: associations.keyword_groups must be a list of lists of strings")
    files, folders, identifiers = (
        _strings(value.get(name, []), f"associations.{name}") for name in _ASSOCIATION_FIELDS
    )
    return Associations(
        files=files,
        folders=folders,
        identifiers=identifiers,
        keyword_groups=tuple(_strings(group, "associations.keyword_groups[]") for group in groups),
    )


def _read_card(source: IO[bytes]) -> dict[str, object]:
    data = source.read(MAX_CARD_FILE_BYTES + 1)
    if len(data) > MAX_CARD_FILE_BYTES:
        _bad(f"--card: more than {MAX_CARD_FILE_BYTES} bytes; a card file holds one card")
    try:
        card = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        _bad(f"--card: not a UTF-8 JSON object ({error.__class__.__name__}); write one card")
    if not isinstance(card, dict):
        _bad("--card: must hold a JSON object with title, recommendation and associations")
    unknown = sorted(set(card) - {"title", "recommendation", "associations"})
    if unknown:
        _bad(f"--card: unknown field(s) {', '.join(unknown)}; a card has title, recommendation, "
             "associations")  # fmt: skip
    for name in ("title", "recommendation"):
        if name in card and not isinstance(card[name], str):
            _bad(f"--card: {name} must be a string")
    return card


@contracts.command("screen")
@click.option("--title", help="The card's title.")
@click.option("--recommendation", help="The card's recommendation.")
@click.option(
    "--card",
    "card_file",
    cls=RenamedOption,
    old="--file",
    type=click.File("rb"),
    help="A JSON card file ({title, recommendation, associations}); - reads stdin.",
)
@json_option
def screen(
    title: str | None, recommendation: str | None, card_file: IO[bytes] | None, as_json: bool
) -> None:
    """Tell what admission would find in a card's text: card rules and screens, as stage:code.

    Exit 0 when clean, 1 when the card would be refused or quarantined, 2 on bad input.
    """
    from active_memory.admission.preview import preview_card

    associations = None
    if card_file is not None:
        card = _read_card(card_file)
        if title is None and isinstance(card.get("title"), str):
            title = str(card["title"])
        if recommendation is None and isinstance(card.get("recommendation"), str):
            recommendation = str(card["recommendation"])
        associations = _associations(card.get("associations"))
    if title is None and recommendation is None and associations is None:
        _bad("give --title, --recommendation or --card with the card to screen")
    screening = preview_card(title, recommendation, associations)
    if as_json:
        emit_json(
            {
                "outcome": screening.outcome,
                "codes": list(screening.codes),
                "refused_by": list(screening.strong),
                "quarantined_by": list(screening.weak),
            }
        )
    else:
        for code in screening.codes:
            click.echo(code)
        click.echo(f"{screening.outcome}: {len(screening.codes)} problem(s)")
    if screening.codes:
        raise click.exceptions.Exit(EXIT_FAILED)
