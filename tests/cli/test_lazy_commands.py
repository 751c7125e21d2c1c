"""Commands load lazily: every row of a group's table is a real command, the cheap commands
start without the store, pydantic or git, and a plain ``store path`` without click at all."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from active_memory.cli.lazy import Lazy, LazyGroup
from active_memory.cli.main import main
from active_memory.cli.store_location import answer_plain_form
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.paths import state_dir_variable
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from factories import make_draft
from start_probe import loaded_by_command

# What a command that only prints a path or the help must never load (each costs start-up).
HEAVY = ("pydantic", "git", "active_memory.store.sqlite", "active_memory.models", "sqlite3")


def _lazy_rows(group: LazyGroup, path: str) -> Iterator[tuple[str, Lazy, click.Command]]:
    ctx = click.Context(group, info_name=path)
    for name, row in group.lazy.items():
        command = group.get_command(ctx, name)
        assert command is not None, f"{path} {name}: {row.target!r} did not load"
        yield f"{path} {name}", row, command
    for name in group.list_commands(ctx):
        child = group.get_command(ctx, name)
        if isinstance(child, LazyGroup):
            yield from _lazy_rows(child, f"{path} {name}")


def test_every_row_of_every_lazy_table_resolves_to_a_click_command_with_its_help() -> None:
    rows = list(_lazy_rows(main, "active-memory"))
    assert {path for path, _, _ in rows} >= {
        "active-memory store",
        "active-memory lessons review",
        "active-memory lessons retire",
        "active-memory lessons stats",
        "active-memory specialist prompt",
        "active-memory specialist eval",
    }
    for path, row, command in rows:
        assert isinstance(command, click.Command), path
        assert command.name == path.rsplit(" ", 1)[1], f"{path}: {row.target!r} is {command.name!r}"
        # The table's line is what --help shows: it must be the command's own first sentence.
        assert row.help == command.get_short_help_str(limit=10_000), path


def test_a_row_naming_something_that_is_not_a_command_fails_when_it_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = types.ModuleType("fake_commands")
    fake.__dict__["helper"] = len
    monkeypatch.setitem(sys.modules, "fake_commands", fake)
    group = LazyGroup(lazy={"helper": Lazy("fake_commands:helper", "Not a command.")})
    with pytest.raises(TypeError, match="not a click command"):
        group.get_command(click.Context(group), "helper")


def test_help_lists_every_command_of_the_table_with_its_short_help() -> None:
    result = run_cli(["--help"])
    assert result.exit_code == 0
    listed = result.output.split("Commands:\n", 1)[1]
    for name, row in main.lazy.items():
        assert f"  {name} " in listed
        assert row.help.split()[0] in listed
    assert "Inspect and back up the lesson store." in listed


def test_an_unknown_command_is_clicks_usage_error() -> None:
    result = run_cli(["stroe", "path"])
    assert result.exit_code == 2
    assert "No such command 'stroe'." in result.output


class _InterruptedWhileLoading(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        raise KeyboardInterrupt


def test_an_interrupt_while_a_command_loads_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "slow_commands", _InterruptedWhileLoading("slow_commands"))
    group = LazyGroup(lazy={"slow": Lazy("slow_commands:slow", "Load slowly.")})
    result = run_cli(["slow"], command=group)
    assert result.exit_code == 130
    assert result.stderr == "error: interrupted while starting; nothing was done\n"


@pytest.mark.parametrize(
    "argv", [["store", "path"], ["store", "path", "--json"], ["--help"], ["--version"]]
)
def test_cheap_commands_start_without_the_store_pydantic_or_git(argv: list[str]) -> None:
    assert loaded_by_command(argv, HEAVY) == []


@pytest.mark.parametrize("argv", [["store", "path"], ["store", "path", "--json"]])
def test_a_plain_store_path_is_answered_without_click_and_prints_what_the_command_prints(
    argv: list[str], isolated_state: dict[str, Path]
) -> None:
    probe = (
        "import json, sys\n"
        f"sys.argv = ['active-memory', *{argv!r}]\n"
        "from active_memory.cli.entry import run\n"
        "run()\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'click')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    answer, _, loaded = done.stdout.rstrip("\n").rpartition("\n")
    assert json.loads(loaded) == []
    through_click = run_cli(argv)
    assert through_click.exit_code == 0
    assert answer + "\n" == through_click.stdout
    assert str(isolated_state[state_dir_variable()]) in answer


@pytest.mark.parametrize(
    "argv",
    [["store", "path", "--store", "relative.sqlite3"], ["store", "path", "--help"], ["store"]],
)
def test_every_other_form_goes_through_the_command_line(argv: list[str]) -> None:
    assert answer_plain_form(argv) is None


def test_a_misconfigured_state_folder_is_reported_by_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_STATE_DIR", "relative")
    assert answer_plain_form(["store", "path"]) is None
    result = run_cli(["store", "path"])
    assert result.exit_code == 2
    assert result.stderr == "error: ACTIVE_MEMORY_STATE_DIR: 'relative' must be an absolute path\n"


@pytest.mark.parametrize(
    "argv", [["lessons", "list"], ["lessons", "stats"], ["store", "check"]], ids=" ".join
)
def test_reading_commands_do_not_load_the_screens(argv: list[str], tmp_path: Path) -> None:
    # The detectors' patterns are most of a reading command's start-up; only a write screens
    # (store check screens what it reads, so it is the control: it must load them).
    store = tmp_path / "lessons.sqlite3"
    with SqliteStore(store) as opened:
        draft = make_draft("Repository card")
        mutation = Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft)
        opened.publish(Publication(run_id="run-1", mutations=(mutation,)))
    loaded = loaded_by_command([*argv, "--store", str(store)], ("active_memory.screening",))
    assert bool(loaded) is (argv == ["store", "check"])
