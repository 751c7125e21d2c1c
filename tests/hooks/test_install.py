from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.errors import RecallError
from active_memory.hooks.install import install_hooks
from active_memory.recall.serve import Server, ServeState
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
STORE = Path("/home/dev/.local/state/zeroshot/active-memory/lessons.sqlite3")
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
    words = shlex.split(ours["command"])
    assert words[1:4] == ["-I", "-S", "-c"]
    assert "from helper import main" in words[4]
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
    assert done.mode == "http"  # type: ignore[attr-defined]
    groups = pre_tool_hooks(settings)
    assert [group["hooks"][0]["type"] for group in groups] == ["command", "http"]  # type: ignore[index]
    assert groups[0] == USER_HOOK
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


def test_invalid_json_is_left_untouched(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".codex" / "hooks.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{ not json")
    with pytest.raises(RecallError, match="not valid JSON"):
        install("codex", tmp_path)
    assert settings.read_text() == "{ not json"
    assert [p.name for p in settings.parent.iterdir()] == ["hooks.json"]


def test_copilot_needs_a_project_and_writes_its_own_file(tmp_path: Path) -> None:
    with pytest.raises(RecallError, match="--project"):
        install("copilot", tmp_path)
    done = install("copilot", tmp_path, project=tmp_path / "project")
    document = json.loads(done.path.read_text())  # type: ignore[attr-defined]
    assert document["version"] == 1
    (hook,) = document["hooks"]["preToolUse"]
    assert hook["type"] == "command"
    assert "from helper import main;main()' copilot" in hook["bash"]


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
def test_written_curl_command_answers_through_the_broker(
    tmp_path: Path, serve: ServeState, harness: str
) -> None:
    done = install(harness, tmp_path, project=tmp_path / "p", serve=serve)
    assert done.mode == "curl"  # type: ignore[attr-defined]
    hooks = json.loads(done.path.read_text())["hooks"]  # type: ignore[attr-defined]
    command = hooks["PreToolUse"][0]["hooks"][0]["command"] if harness == "codex" else (
        hooks["preToolUse"][0]["bash"])  # fmt: skip
    assert serve.ticket in command
    assert "Bearer" not in command
    payload = FIXTURES / harness / ("bash.json" if harness == "codex" else "view.json")
    answer = json.loads(run_command(command, payload.read_bytes()))
    text = json.dumps(answer)
    assert lesson_id(6 if harness == "codex" else 1) in text


def test_written_curl_command_prints_empty_when_the_broker_is_gone(
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
