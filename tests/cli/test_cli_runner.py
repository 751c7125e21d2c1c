"""Every CLI test runs the CLI through ``cli_runner.run_cli``, which re-raises crashes."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from cli_runner import run_cli

TESTS = Path(__file__).resolve().parents[1]
HELPER = TESTS / "cli_runner.py"
# A CliRunner built anywhere else would catch a crash and report it as exit 1.
_OWN_RUNNER = re.compile(r"\bCliRunner\s*\(")


def test_no_test_builds_its_own_cli_runner() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != HELPER
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if _OWN_RUNNER.search(line)
    ]
    assert offenders == [], "use cli_runner.run_cli, not a runner of its own, in " + ", ".join(
        offenders
    )


def test_an_unexpected_exception_fails_the_test_instead_of_passing_as_exit_1() -> None:
    @click.command()
    def crashes() -> None:
        raise LookupError("a bug, not a refusal")

    with pytest.raises(LookupError, match="a bug"):
        run_cli([], command=crashes)


def test_an_exit_code_is_still_an_exit_code() -> None:
    @click.command()
    def refuses() -> None:
        click.echo("error: no", err=True)
        raise click.exceptions.Exit(2)

    result = run_cli([], command=refuses)

    assert (result.exit_code, result.stderr) == (2, "error: no\n")
