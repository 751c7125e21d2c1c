"""``active-memory skills install``: the shipped agent skills, into the user's skill folders."""

from __future__ import annotations

import click

from active_memory.cli._common import EXIT_BAD_INPUT, emit_json, json_option

__all__ = ["skills"]


@click.group("skills")
def skills() -> None:
    """The agent skills active-memory ships (for Claude Code and Codex)."""


@skills.command("install")
@click.option(
    "--force", is_flag=True, help="Replace a SKILL.md that active-memory did not install."
)
@json_option
def install(force: bool, as_json: bool) -> None:
    """Install or refresh the memory init skill in ~/.claude/skills and ~/.agents/skills."""
    from active_memory.history_init.skills import install_skills

    try:
        done = install_skills(force=force)
    except OSError as error:
        click.echo(
            f"error: cannot write the skill ({error.strerror or error}); check the "
            "folder's permissions",
            err=True,
        )
        raise click.exceptions.Exit(1) from None
    if as_json:
        emit_json([{"host": s.host, "path": str(s.path), "outcome": s.outcome} for s in done])
    else:
        for item in done:
            click.echo(f"{item.host:<7} {item.outcome:<9} {item.path}")
    kept = [item for item in done if item.outcome == "kept"]
    for item in kept:
        click.echo(
            f"error: {item.path} is not active-memory's; it was kept: pass --force to replace it",
            err=True,
        )
    if kept:
        raise click.exceptions.Exit(EXIT_BAD_INPUT)
