"""``active-memory contracts check [DIR]``: every specialist contract is strict Draft 2020-12."""

from __future__ import annotations

from pathlib import Path

import click

from active_memory.cli._common import EXIT_FAILED, emit_json, json_option

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

    With DIR, its NAME.schema.json files are checked in place of the shipped ones (what
    `--contracts DIR` would use). Exit 1 when any contract is not strict.
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
