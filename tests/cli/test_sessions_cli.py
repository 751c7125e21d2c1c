"""``active-memory sessions --home HARNESS=DIR``: one repeatable option for every harness's
folder; the ``--<harness>-dir`` flags it replaced still work for one release, with a notice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.harnesses import HARNESS_NAMES, HARNESSES
from cli_runner import run_cli


def _homes(root: Path) -> dict[str, Path]:
    """An empty sessions folder inside each harness's home below ``root``."""
    homes = {}
    for row in HARNESSES:
        (root / row.name / row.sessions).mkdir(parents=True)
        homes[row.name] = root / row.name
    return homes


def _sessions(*args: str) -> Result:
    return run_cli(["sessions", "--json", *args])


def test_home_is_repeated_once_per_harness_and_takes_a_home_or_its_sessions_folder(
    tmp_path: Path,
) -> None:
    homes = _homes(tmp_path)
    given = [f"--home={name}={home}" for name, home in homes.items()]
    done = _sessions(*given)
    assert (done.exit_code, done.stderr) == (0, "")
    roots = json.loads(done.stdout)["roots"]
    assert roots == {row.name: str(homes[row.name] / row.sessions) for row in HARNESSES}
    inside = _sessions("--home", f"pi={homes['pi'] / 'sessions'}")
    assert json.loads(inside.stdout)["roots"]["pi"] == str(homes["pi"] / "sessions")


@pytest.mark.parametrize("name", HARNESS_NAMES)
def test_the_old_dir_flag_still_works_with_a_one_line_notice(tmp_path: Path, name: str) -> None:
    home = _homes(tmp_path)[name]
    old = _sessions(f"--{name}-dir", str(home))
    new = _sessions("--home", f"{name}={home}")
    assert old.exit_code == 0
    assert old.stderr == f"warning: --{name}-dir is deprecated; use --home {name}=DIR\n"
    assert old.stdout == new.stdout


def test_home_wins_over_an_old_flag_for_the_same_harness(tmp_path: Path) -> None:
    homes = _homes(tmp_path)
    done = _sessions(
        "--claude-dir", str(tmp_path / "elsewhere"), "--home", f"claude={homes['claude']}"
    )
    assert json.loads(done.stdout)["roots"]["claude"] == str(homes["claude"] / "projects")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("pi", "error: --home 'pi' is not HARNESS=DIR; give one such as --home claude=~/.claude"),
        ("pi=", "error: --home 'pi=' is not HARNESS=DIR; give one such as --home claude=~/.claude"),
        ("cursor=/x", "error: --home 'cursor=/x' names no harness; choose one of "
                      "claude, codex, copilot, pi"),
    ],
)  # fmt: skip
def test_a_bad_home_is_one_sentence_and_exit_2(given: str, said: str) -> None:
    done = _sessions("--home", given)
    assert (done.exit_code, done.stdout, done.stderr) == (2, "", said + "\n")


def test_a_harness_given_two_homes_or_a_file_is_refused(tmp_path: Path) -> None:
    twice = _sessions("--home", "pi=/a", "--home", "pi=/b")
    assert (twice.exit_code, twice.stderr) == (
        2, "error: --home names pi twice; give each harness one home\n")  # fmt: skip
    file = tmp_path / "notes.txt"
    file.write_text("x")
    done = _sessions("--home", f"codex={file}")
    said = (
        f"error: --home codex: {str(file)!r} is a file; give the codex home or its sessions/ folder"
    )
    assert (done.exit_code, done.stderr) == (2, said + "\n")


def test_help_shows_home_with_each_harness_and_hides_the_old_flags() -> None:
    shown = run_cli(["sessions", "--help"]).stdout
    flat = " ".join(shown.split())
    assert "--home HARNESS=DIR" in flat
    for row in HARNESSES:
        assert (
            f"{row.name} {row.shown_home} (${row.home_variable}; sessions in {row.sessions}/)"
            in flat
        )
        assert f"--{row.name}-dir" not in flat
