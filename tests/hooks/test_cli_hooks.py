from __future__ import annotations

import json
import shlex
from pathlib import Path

import git
import pytest

from cli_runner import run_cli


@pytest.fixture(autouse=True)
def no_harness_homes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI honours $CODEX_HOME and $COPILOT_HOME: a developer's own never leak in."""
    for name in ("CODEX_HOME", "COPILOT_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_hooks_install_writes_and_reports(tmp_path: Path) -> None:
    project = tmp_path / "widgets"
    project.mkdir()
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    args = ["hooks", "install", "--harness", "codex", "--project", str(project),
            "--store", str(store), "--json"]  # fmt: skip
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["mode"], report["changed"]) == ("helper", True)
    command = json.loads(Path(report["path"]).read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert str(store) in command["command"]
    assert str(project) in command["command"]
    again = run_cli(args[:-1])
    assert again.exit_code == 0
    assert again.stdout.startswith("already installed: codex helper hook in ")


def test_hooks_install_copilot_without_project_installs_for_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot"))
    store = tmp_path / "s" / "lessons.sqlite3"
    args = ["hooks", "install", "--harness", "copilot", "--repository", str(tmp_path)]
    result = run_cli([*args, "--store", str(store), "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["path"] == str(tmp_path / "copilot" / "hooks" / "active-memory.json")
    (hook,) = json.loads(Path(report["path"]).read_text())["hooks"]["preToolUse"]
    assert str(store) in hook["bash"]


def test_hooks_install_in_a_git_project_keeps_the_file_out_of_commits(tmp_path: Path) -> None:
    project = tmp_path / "widgets"
    git.Repo.init(project)
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    args = ["hooks", "install", "--harness", "claude", "--project", str(project),
            "--store", str(store)]  # fmt: skip
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    exclude = project / ".git" / "info" / "exclude"
    assert "kept out of git: /.claude/settings.local.json, " in result.stdout
    assert str(exclude) in result.stdout
    assert "/.claude/settings.local.json\n" in exclude.read_text()
    again = run_cli([*args, "--json"])
    report = json.loads(again.stdout)["git_exclude"]
    assert (report["file"], report["added"]) == (None, [])


def test_a_relative_store_is_written_into_the_hook_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "widgets"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    args = ["hooks", "install", "--harness", "codex", "--project", "widgets",
            "--store", "state/lessons.sqlite3", "--json"]  # fmt: skip
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    command = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]["PreToolUse"]
    words = shlex.split(command[0]["hooks"][0]["command"])
    store = words[words.index("--store") + 1]
    ticket = words[words.index("--ticket") + 1]
    assert store == str(tmp_path / "state" / "lessons.sqlite3")
    assert ticket.startswith(str(tmp_path / "state" / "serve") + "/")


def test_a_codex_project_install_says_how_to_trust_the_project(tmp_path: Path) -> None:
    project = tmp_path / "widgets"
    project.mkdir()
    store = tmp_path / "state" / "lessons.sqlite3"
    args = ["hooks", "install", "--harness", "codex", "--project", str(project),
            "--store", str(store)]  # fmt: skip
    result = run_cli(args)
    assert result.exit_code == 0, result.stderr
    assert "unless the project is trusted" in result.stdout
    assert f"[projects.{json.dumps(str(project.resolve()))}]" in result.stdout
    assert 'trust_level = "trusted"' in result.stdout
    assert "/hooks" in result.stdout
    again = run_cli([*args, "--json"])
    notes = json.loads(again.stdout)["notes"]
    # Unchanged, but Codex has not trusted the hook yet: the note says how, headless too.
    assert len(notes) == 2
    assert "it is not trusted yet" in notes[1]
    assert "codex app-server" in notes[1]
    key = f"{project.resolve() / '.codex' / 'hooks.json'}:pre_tool_use:0:0"
    assert f"[hooks.state.{json.dumps(key)}]" in notes[1]
