from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import git
import pytest

from active_memory.errors import RecallError
from active_memory.hooks.exclude import Exclusion
from active_memory.hooks.install import Installation, install_hooks
from active_memory.hooks.standalone import Server, ServeState
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
STORE = Path("/home/dev/.local/state/active-memory/lessons.sqlite3")
USER_HOOK = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeState]:
    backend = FakeBackend(widgets_lessons())
    with Server(backend, WORKSPACE, state_dir=tmp_path / "serve", store=str(STORE),
                repository=REPOSITORY) as server:  # fmt: skip
        yield server.state()


def install(harness: str, tmp_path: Path, **options: object) -> object:
    return install_hooks(harness, workspace=Path(WORKSPACE), store=STORE, home=tmp_path / "home",
                         **options)  # type: ignore[arg-type]  # fmt: skip


def pre_tool_hooks(path: Path) -> list[dict[str, object]]:
    return json.loads(path.read_text())["hooks"]["PreToolUse"]  # type: ignore[no-any-return]


def program_words(command: str) -> list[str]:
    """The words of the program a fail-soft hook command runs inside ``out=$(…)``."""
    start = command.index("out=$(") + len("out=$(")
    return shlex.split(command[start : command.index(" 2>/dev/null)", start)])


def test_claude_helper_hook_merges_with_existing_settings(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [USER_HOOK],
                                     "Stop": [{"hooks": []}]}}))  # fmt: skip
    done = install("claude", tmp_path)
    assert (done.mode, done.changed, done.path) == ("helper", True, settings)  # type: ignore[attr-defined]
    document = json.loads(settings.read_text())
    assert document["model"] == "opus"
    assert document["hooks"]["Stop"] == [{"hooks": []}]
    groups = document["hooks"]["PreToolUse"]
    assert groups[0] == USER_HOOK
    ours = groups[1]["hooks"][0]
    assert ours["type"] == "command"
    words = program_words(ours["command"])
    assert words[1:4] == ["-I", "-S", "-c"]
    assert "from helper import run;run()" in words[4]
    assert words[5] == "claude"
    assert json.loads(done.backup.read_text())["model"] == "opus"  # type: ignore[attr-defined]


def test_installing_twice_changes_nothing(tmp_path: Path) -> None:
    first = install("codex", tmp_path)
    text = first.path.read_text()  # type: ignore[attr-defined]
    second = install("codex", tmp_path)
    assert (second.changed, second.backup) == (False, None)  # type: ignore[attr-defined]
    assert first.path.read_text() == text  # type: ignore[attr-defined]
    assert len(pre_tool_hooks(first.path)) == 1  # type: ignore[attr-defined]


def test_switching_to_a_running_broker_replaces_our_hook_only(
    tmp_path: Path, serve: ServeState
) -> None:
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [USER_HOOK]}}))
    install("claude", tmp_path, project=project)
    done = install("claude", tmp_path, project=project, serve=serve)
    # A command, never an http hook: Copilot CLI refuses a whole project settings file that
    # holds a plain-http pre-tool hook, and a literal token goes stale when serve restarts.
    assert done.mode == "helper"  # type: ignore[attr-defined]
    groups = pre_tool_hooks(settings)
    assert [group["hooks"][0]["type"] for group in groups] == ["command", "command"]  # type: ignore[index]
    assert groups[0] == USER_HOOK
    command = groups[1]["hooks"][0]["command"]  # type: ignore[index]
    assert serve.ticket in command
    assert "Bearer" not in settings.read_text()


def test_invalid_json_is_left_untouched(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".codex" / "hooks.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{ not json")
    with pytest.raises(RecallError, match="not valid JSON"):
        install("codex", tmp_path)
    assert settings.read_text() == "{ not json"
    assert [p.name for p in settings.parent.iterdir()] == ["hooks.json"]


def test_copilot_writes_its_own_file_in_a_project(tmp_path: Path) -> None:
    done = install("copilot", tmp_path, project=tmp_path / "project")
    assert done.path == tmp_path / "project" / ".github" / "hooks" / "active-memory.json"  # type: ignore[attr-defined]
    document = json.loads(done.path.read_text())  # type: ignore[attr-defined]
    assert document["version"] == 1
    (hook,) = document["hooks"]["preToolUse"]
    assert (hook["type"], hook["timeoutSec"]) == ("command", 5)
    assert "from helper import run;run()' copilot" in hook["bash"]


def test_copilot_user_level_install_follows_copilot_home(tmp_path: Path) -> None:
    done = install("copilot", tmp_path)
    assert done.path == tmp_path / "home" / ".copilot" / "hooks" / "active-memory.json"  # type: ignore[attr-defined]
    copilot_home = tmp_path / "copilot-home"
    moved = install_hooks("copilot", workspace=Path(WORKSPACE), store=STORE,
                          environ={"COPILOT_HOME": str(copilot_home)})  # fmt: skip
    assert moved.path == copilot_home / "hooks" / "active-memory.json"
    (hook,) = json.loads(moved.path.read_text())["hooks"]["preToolUse"]
    assert "copilot" in program_words(hook["bash"])
    assert install_hooks("copilot", workspace=Path(WORKSPACE), store=STORE,
                         environ={"COPILOT_HOME": str(copilot_home)}).changed is False  # fmt: skip


def test_pi_gets_the_extension_with_the_ticket_filled_in(tmp_path: Path, serve: ServeState) -> None:
    done = install("pi", tmp_path, project=tmp_path / "project", serve=serve)
    text = done.path.read_text()  # type: ignore[attr-defined]
    assert done.path.name == "active-memory.ts"  # type: ignore[attr-defined]
    assert json.dumps(serve.ticket) in text
    assert "__ACTIVE_MEMORY_TICKET__" not in text.split("startsWith", 1)[0]


def run_command(command: str, payload: bytes) -> bytes:
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                          timeout=20, env=CLEAN_ENV)  # fmt: skip
    assert done.returncode == 0
    return done.stdout


@pytest.mark.parametrize("harness", ["codex", "copilot"])
def test_the_helper_command_written_while_serve_runs_answers_through_the_broker(
    tmp_path: Path, serve: ServeState, harness: str
) -> None:
    done = install(harness, tmp_path, project=tmp_path / "p", serve=serve)
    assert done.mode == "helper"  # type: ignore[attr-defined]
    hooks = json.loads(done.path.read_text())["hooks"]  # type: ignore[attr-defined]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"] if harness == "codex" else (
        hooks["preToolUse"][0]["bash"])  # fmt: skip
    assert serve.ticket in command
    assert "Bearer" not in command
    payload = FIXTURES / harness / ("bash.json" if harness == "codex" else "view.json")
    answer = json.loads(run_command(command, payload.read_bytes()))
    text = json.dumps(answer)
    assert lesson_id(6 if harness == "codex" else 1) in text


def test_the_helper_command_written_while_serve_runs_prints_empty_when_serve_is_gone(
    tmp_path: Path, serve: ServeState
) -> None:
    done = install("codex", tmp_path, serve=serve)
    command = pre_tool_hooks(done.path)[0]["hooks"][0]["command"]  # type: ignore[attr-defined,index]
    os.unlink(serve.ticket)
    assert run_command(command, b"{}") == b"{}\n"  # type: ignore[arg-type]


def test_written_helper_command_runs_and_fails_open(tmp_path: Path) -> None:
    done = install("codex", tmp_path)
    command = pre_tool_hooks(done.path)[0]["hooks"][0]["command"]  # type: ignore[attr-defined,index]
    payload = (FIXTURES / "codex" / "bash.json").read_bytes()
    assert run_command(command, payload) == b"{}\n"  # type: ignore[arg-type]


def test_installs_in_the_same_second_never_overwrite_a_backup(
    tmp_path: Path, serve: ServeState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "active_memory.hooks.config_files.time.strftime", lambda _: "20260101120000"
    )
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    original = json.dumps({"model": "opus", "hooks": {"PreToolUse": [USER_HOOK]}})
    settings.write_text(original)
    first = install("claude", tmp_path, project=project)
    helper_text = settings.read_text()
    second = install("claude", tmp_path, project=project, serve=serve)
    third = install("claude", tmp_path, project=project)
    backups = [first.backup, second.backup, third.backup]  # type: ignore[attr-defined]
    assert [backup.name for backup in backups] == [  # type: ignore[union-attr]
        "settings.local.json.20260101120000.bak",
        "settings.local.json.20260101120000-1.bak",
        "settings.local.json.20260101120000-2.bak",
    ]
    assert backups[0].read_text() == original  # type: ignore[union-attr]
    assert backups[1].read_text() == helper_text  # type: ignore[union-attr]
    assert serve.ticket in backups[2].read_text()  # type: ignore[union-attr]
    assert all(stat.S_IMODE(b.stat().st_mode) == 0o600 for b in backups)  # type: ignore[union-attr]


# --- keeping token files out of git ------------------------------------------------------


def git_repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Test Author")
        config.set_value("user", "email", "author@example.invalid")
    (path / "README").write_text("hi\n")
    repo.index.add(["README"])
    repo.index.commit("first")
    return repo


def staged_after_add_all(repo: git.Repo) -> list[str]:
    repo.git.add("-A")
    return str(repo.git.diff("--cached", "--name-only")).splitlines()


def test_a_project_token_file_is_excluded_from_git_once(tmp_path: Path, serve: ServeState) -> None:
    project = tmp_path / "project"
    repo = git_repo(project)
    first = install("claude", tmp_path, project=project, ticket=tmp_path / "serve" / "t.ticket")
    done = install("claude", tmp_path, project=project, serve=serve)
    exclude = project / ".git" / "info" / "exclude"
    assert first.exclusion.exclude_file == exclude  # type: ignore[attr-defined]
    assert first.exclusion.added == (  # type: ignore[attr-defined]
        "/.claude/settings.local.json",
        "/.claude/settings.local.json.*.bak",
    )
    assert done.exclusion.exclude_file is None  # type: ignore[attr-defined]
    assert done.backup is not None  # type: ignore[attr-defined]
    lines = exclude.read_text().splitlines()
    assert lines.count("/.claude/settings.local.json") == 1
    assert serve.ticket in done.path.read_text()  # type: ignore[attr-defined]
    assert staged_after_add_all(repo) == []


def test_nothing_is_added_when_git_already_ignores_the_file(
    tmp_path: Path, serve: ServeState
) -> None:
    project = tmp_path / "project"
    repo = git_repo(project)
    (project / ".gitignore").write_text(".claude/\n")
    repo.index.add([".gitignore"])
    repo.index.commit("ignore .claude")
    before = (project / ".git" / "info" / "exclude").read_text()
    done = install("claude", tmp_path, project=project, serve=serve)
    assert done.exclusion.already_ignored  # type: ignore[attr-defined]
    assert (project / ".git" / "info" / "exclude").read_text() == before


@pytest.mark.parametrize("harness", ["codex", "copilot", "pi"])
def test_files_naming_the_ticket_are_excluded_in_a_subfolder_checkout(
    tmp_path: Path, serve: ServeState, harness: str
) -> None:
    repo = git_repo(tmp_path / "mono")
    project = tmp_path / "mono" / "we[ird] *dir"
    project.mkdir()
    done = install(harness, tmp_path, project=project, serve=serve)
    assert serve.ticket in done.path.read_text()  # type: ignore[attr-defined]
    relative = done.path.relative_to(tmp_path / "mono").as_posix()  # type: ignore[attr-defined]
    assert done.exclusion.added[0].startswith("/we\\[ird\\] \\*dir/")  # type: ignore[attr-defined]
    assert relative not in staged_after_add_all(repo)


def test_a_linked_worktree_excludes_through_the_shared_git_directory(
    tmp_path: Path, serve: ServeState
) -> None:
    repo = git_repo(tmp_path / "main")
    repo.git.worktree("add", str(tmp_path / "linked"))
    linked = git.Repo(tmp_path / "linked")
    done = install("claude", tmp_path, project=tmp_path / "linked", serve=serve)
    assert done.exclusion.exclude_file == tmp_path / "main" / ".git" / "info" / "exclude"  # type: ignore[attr-defined]
    assert staged_after_add_all(linked) == []


def test_a_tracked_token_file_is_reported(tmp_path: Path, serve: ServeState) -> None:
    project = tmp_path / "project"
    repo = git_repo(project)
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    repo.index.add([".claude/settings.local.json"])
    repo.index.commit("track local settings")
    done = install("claude", tmp_path, project=project, serve=serve)
    assert done.exclusion.tracked  # type: ignore[attr-defined]


def test_outside_git_or_without_a_secret_nothing_is_excluded(
    tmp_path: Path, serve: ServeState
) -> None:
    done = install("claude", tmp_path, project=tmp_path / "plain", serve=serve)
    assert done.exclusion == Exclusion()  # type: ignore[attr-defined]
    assert not (tmp_path / "plain" / ".git").exists()
    git_repo(tmp_path / "repo")
    helper = install("codex", tmp_path, project=tmp_path / "repo")  # no ticket, no token
    assert helper.exclusion == Exclusion()  # type: ignore[attr-defined]
    assert "active-memory" not in (tmp_path / "repo" / ".git" / "info" / "exclude").read_text()


def test_an_installation_prints_its_paths_and_git_exclusion(tmp_path: Path) -> None:
    exclusion = Exclusion(exclude_file=tmp_path / "exclude", added=("/a",), tracked=True)
    done = Installation(harness="claude", path=tmp_path / "settings.json", mode="http",
                        changed=True, exclusion=exclusion)  # fmt: skip
    assert done.model_dump(mode="json") == {
        "harness": "claude", "path": str(tmp_path / "settings.json"), "mode": "http",
        "changed": True, "backup": None,
        "git_exclude": {"file": str(tmp_path / "exclude"), "added": ["/a"],
                        "already_ignored": False, "tracked": True},
        "notes": [], "session_end": None,
    }  # fmt: skip
    assert Installation(harness="pi", path=tmp_path, mode="extension", changed=False).model_dump(
        mode="json"
    )["git_exclude"] == {"file": None, "added": [], "already_ignored": False, "tracked": False}


# --- Codex: updated in place, trust named --------------------------------------------------

USER_AFTER = {"matcher": "apply_patch", "hooks": [{"type": "command", "command": "./fmt.sh"}]}


def test_a_codex_reinstall_keeps_every_position_and_changes_no_byte(
    tmp_path: Path, serve: ServeState
) -> None:
    hooks_json = tmp_path / "home" / ".codex" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    hooks_json.write_text(json.dumps({"hooks": {"PreToolUse": [USER_HOOK]}}))
    install("codex", tmp_path)
    # The user adds a hook after ours, then we switch to the broker and back.
    document = json.loads(hooks_json.read_text())
    document["hooks"]["PreToolUse"].append(USER_AFTER)
    hooks_json.write_text(json.dumps(document, indent=2) + "\n")
    served = install("codex", tmp_path, serve=serve)
    groups = pre_tool_hooks(hooks_json)
    assert groups[0] == USER_HOOK
    assert groups[2] == USER_AFTER
    assert groups[1]["matcher"] == "Bash|apply_patch"
    assert serve.ticket in groups[1]["hooks"][0]["command"]  # type: ignore[index]
    assert served.changed  # type: ignore[attr-defined]
    text = hooks_json.read_text()
    again = install("codex", tmp_path, serve=serve)
    assert (again.changed, again.backup) == (False, None)  # type: ignore[attr-defined]
    assert hooks_json.read_text() == text
    install("codex", tmp_path)
    assert [group["matcher"] for group in pre_tool_hooks(hooks_json)] == [
        "Bash", "Bash|apply_patch", "apply_patch"]  # fmt: skip


def test_our_hook_in_a_users_group_stays_there_and_copies_are_dropped(tmp_path: Path) -> None:
    hooks_json = tmp_path / "home" / ".codex" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    ours = {"type": "command", "command": "/old/python3 -c 'import active_memory'"}
    shared = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./a.sh"}, ours]}
    copy = {"matcher": "Bash|apply_patch", "hooks": [ours]}
    hooks_json.write_text(json.dumps({"hooks": {"PreToolUse": [shared, USER_AFTER, copy]}}))
    install("codex", tmp_path)
    groups = pre_tool_hooks(hooks_json)
    assert len(groups) == 2
    assert groups[0]["matcher"] == "Bash"  # the user's group keeps its matcher
    first, second = groups[0]["hooks"]  # type: ignore[misc]
    assert first == {"type": "command", "command": "./a.sh"}
    assert "from helper import run;run()" in second["command"]
    assert groups[1] == USER_AFTER


def test_copilot_hooks_are_updated_in_place_too(tmp_path: Path, serve: ServeState) -> None:
    project = tmp_path / "project"
    path = project / ".github" / "hooks" / "active-memory.json"
    path.parent.mkdir(parents=True)
    user = {"type": "command", "bash": "./audit.sh"}
    install("copilot", tmp_path, project=project)
    document = json.loads(path.read_text())
    document["hooks"]["preToolUse"] = [user, *document["hooks"]["preToolUse"], user]
    path.write_text(json.dumps(document, indent=2) + "\n")
    install("copilot", tmp_path, project=project, serve=serve)
    listed = json.loads(path.read_text())["hooks"]["preToolUse"]
    assert [listed[0], listed[2]] == [user, user]
    assert serve.ticket in listed[1]["bash"]


def test_codex_project_install_names_project_trust(tmp_path: Path) -> None:
    project = tmp_path / "project"
    done = install("codex", tmp_path, project=project)
    trust, review = done.notes  # type: ignore[attr-defined]
    config = tmp_path / "home" / ".codex" / "config.toml"
    assert str(config) in trust
    assert f"[projects.{json.dumps(str(project))}]" in trust
    assert 'trust_level = "trusted"' in trust
    assert "/hooks" in review
    key = f"{project / '.codex' / 'hooks.json'}:pre_tool_use:0:0"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[projects.{json.dumps(str(project))}]\ntrust_level = "trusted"\n'
                      f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "sha256:00"\n')  # fmt: skip
    assert install("codex", tmp_path, project=project).notes == ()  # type: ignore[attr-defined]
    codex_home = tmp_path / "codex-home"
    elsewhere = install_hooks("codex", workspace=Path(WORKSPACE), store=STORE,
                              project=project, environ={"CODEX_HOME": str(codex_home)})  # fmt: skip
    assert str(codex_home / "config.toml") in elsewhere.notes[0]
    user_level = install_hooks("codex", workspace=Path(WORKSPACE), store=STORE,
                               environ={"CODEX_HOME": str(codex_home)})  # fmt: skip
    assert user_level.path == codex_home / "hooks.json"
    assert len(user_level.notes) == 1  # the review only: a user-level file needs no project


def test_a_codex_hook_is_written_with_its_context_limit(tmp_path: Path) -> None:
    done = install("codex", tmp_path)
    (hook,) = pre_tool_hooks(done.path)[0]["hooks"]  # type: ignore[attr-defined,index]
    assert hook["additionalContextLimit"] == 10_000  # type: ignore[index]


def test_codex_hook_trust_is_detected_by_its_state_key(tmp_path: Path) -> None:
    """Codex keeps a hook's trust under its file, event and position; an install names a hook
    with no trust, or one changed since it was trusted (another store path here, an interpreter
    path in life), and the headless
    way to trust it."""
    config = tmp_path / "home" / ".codex" / "config.toml"
    first = install("codex", tmp_path)
    hooks_json = tmp_path / "home" / ".codex" / "hooks.json"
    key = f"{hooks_json}:pre_tool_use:0:0"
    (untrusted,) = first.notes  # type: ignore[attr-defined]
    assert "it is not trusted yet" in untrusted
    assert f"[hooks.state.{json.dumps(key)}]" in untrusted
    assert "hooks/list" in untrusted
    config.write_text(f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "sha256:ab"\n')
    assert install("codex", tmp_path).notes == ()  # type: ignore[attr-defined]
    moved = install_hooks("codex", workspace=Path(WORKSPACE), store=Path("/elsewhere/l.sqlite3"),
                          home=tmp_path / "home")  # a changed command  # fmt: skip
    (changed,) = moved.notes  # type: ignore[attr-defined]
    assert "it changed since you trusted it" in changed
