"""``hooks install --learn``: the session-end hook beside the recall hook, for every harness that
has one; installing twice changes nothing, the user's own hooks stay, ``--no-learn`` and
``hooks uninstall`` take ours out, and pi, which has no such hook, says what to run instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from active_memory.harnesses import HARNESSES
from active_memory.hooks.install import install_hooks
from active_memory.hooks.learn_hooks import SESSION_END_EVENTS
from active_memory.hooks.uninstall import uninstall_hooks
from cli_runner import run_cli

USERS_HOOK = {"type": "command", "command": "notify-send bye", "timeout": 3}


def install(harness: str, tmp_path: Path, learn: bool | None) -> Any:
    return install_hooks(harness, workspace=tmp_path / "project", store=tmp_path / "s.sqlite3",
                         project=tmp_path / "project", home=tmp_path / "home", learn=learn,
                         learn_dir=tmp_path / "learn")  # fmt: skip


@pytest.fixture(autouse=True)
def project(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path / "project"


def session_end_hooks(path: Path, harness: str) -> list[Any]:
    event = SESSION_END_EVENTS[harness]
    assert event is not None
    entries: list[Any] = json.loads(path.read_text())["hooks"].get(event, [])
    if harness == "copilot":
        return entries
    return [hook for group in entries for hook in group["hooks"]]


def test_every_harness_row_says_whether_it_has_a_session_end_hook() -> None:
    found = {row.name: row.session_end_event for row in HARNESSES}
    assert found == {"claude": "SessionEnd", "codex": "SessionEnd", "copilot": "sessionEnd",
                     "pi": "session_shutdown"}  # fmt: skip


@pytest.mark.parametrize("harness", ["claude", "codex", "copilot"])
def test_the_session_end_hook_is_written_beside_the_recall_hook_once(
    tmp_path: Path, harness: str
) -> None:
    done = install(harness, tmp_path, learn=True)
    assert done.session_end == SESSION_END_EVENTS[harness]
    [hook] = session_end_hooks(done.path, harness)
    command = hook["bash"] if harness == "copilot" else hook["command"]
    assert f" {harness} --folder {tmp_path / 'learn'} --store {tmp_path / 's.sqlite3'} " in command
    assert command.endswith(" >/dev/null 2>&1 || true")
    assert "learn/session_end" not in command  # imported from its folder, by module name
    document = json.loads(done.path.read_text())
    assert list(document["hooks"]) == [
        {"claude": "PreToolUse", "codex": "PreToolUse", "copilot": "preToolUse"}[harness],
        SESSION_END_EVENTS[harness],
    ]
    before = done.path.read_bytes()
    again = install(harness, tmp_path, learn=True)
    assert (again.changed, again.path.read_bytes()) == (False, before)
    # Without --learn, an installed session-end hook is left as it is.
    assert install(harness, tmp_path, learn=None).changed is False


def test_the_users_own_session_end_hook_keeps_its_place(tmp_path: Path, project: Path) -> None:
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    users = {"hooks": {"SessionEnd": [{"hooks": [USERS_HOOK]}]}}
    settings.write_text(json.dumps(users))
    install("claude", tmp_path, learn=True)
    groups = json.loads(settings.read_text())["hooks"]["SessionEnd"]
    assert groups[0] == {"hooks": [USERS_HOOK]}
    assert len(groups) == 2
    install("claude", tmp_path, learn=False)
    assert json.loads(settings.read_text())["hooks"]["SessionEnd"] == [{"hooks": [USERS_HOOK]}]
    assert "PreToolUse" in json.loads(settings.read_text())["hooks"]


@pytest.mark.parametrize("harness", ["claude", "codex", "copilot"])
def test_no_learn_removes_only_the_session_end_hook_and_uninstall_removes_both(
    tmp_path: Path, harness: str
) -> None:
    done = install(harness, tmp_path, learn=True)
    install(harness, tmp_path, learn=False)
    hooks = json.loads(done.path.read_text())["hooks"]
    assert SESSION_END_EVENTS[harness] not in hooks
    assert len(hooks) == 1  # the recall hook stays
    install(harness, tmp_path, learn=True)
    path, changed = uninstall_hooks(harness, project=tmp_path / "project", home=tmp_path / "home")
    assert (path, changed) == (done.path, True)
    assert json.loads(path.read_text())["hooks"] == {}
    assert (
        uninstall_hooks(harness, project=tmp_path / "project", home=tmp_path / "home")[1] is False
    )


def test_pi_gets_the_command_in_its_extension_and_keeps_it_on_a_plain_reinstall(
    tmp_path: Path,
) -> None:
    done = install("pi", tmp_path, learn=True)
    assert done.session_end == "session_shutdown"
    text = done.path.read_text()
    [line] = [line for line in text.splitlines() if line.startswith("const LEARN_COMMAND = ")]
    argv = json.loads(json.loads(line.removeprefix("const LEARN_COMMAND = ").rstrip(";")))
    assert argv[-7:] == ["pi", "--folder", str(tmp_path / "learn"), "--store",
                         str(tmp_path / "s.sqlite3"), "--python", argv[0]]  # fmt: skip
    assert argv[1:3] == ["-I", "-S"]
    kept = install("pi", tmp_path, learn=None)
    assert (kept.changed, kept.session_end) == (False, "session_shutdown")
    off = install("pi", tmp_path, learn=False)
    assert off.session_end is None
    assert 'const LEARN_COMMAND = "__ACTIVE_MEMORY_LEARN__";' in off.path.read_text()
    path, changed = uninstall_hooks("pi", project=tmp_path / "project", home=tmp_path / "home")
    assert changed
    assert not path.exists()


def test_a_harness_without_a_session_end_event_says_what_to_run_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SESSION_END_EVENTS, "copilot", None)
    done = install("copilot", tmp_path, learn=True)
    assert done.session_end is None
    assert done.notes == (
        "Copilot CLI has no session-end hook active-memory can install, so its sessions are not "
        "queued by themselves: queue one after it ends with `active-memory learn queue FILE` "
        "(its session files are under ~/.copilot/session-state), then run `active-memory learn "
        "run`.",
    )
    assert "sessionEnd" not in json.loads(done.path.read_text())["hooks"]


def test_codex_is_told_to_trust_the_session_end_hook_too(tmp_path: Path) -> None:
    done = install("codex", tmp_path, learn=True)
    [note] = [note for note in done.notes if "SessionEnd" in note]
    key = f"{done.path}:session_end:0:0"
    assert f"[hooks.state.{json.dumps(key)}]" in note
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[hooks.state.{json.dumps(key)}]\ntrusted_hash = "sha256:x"\n')
    again = install("codex", tmp_path, learn=True)
    assert not [note for note in again.notes if "SessionEnd" in note]


def test_the_cli_says_where_sessions_are_queued_and_refuses_learn_for_mcp(
    tmp_path: Path, project: Path
) -> None:
    store = tmp_path / "state" / "lessons.sqlite3"
    result = run_cli(["hooks", "install", "--harness", "claude", "--project", str(project),
                      "--learn", "--store", str(store)])  # fmt: skip
    assert result.exit_code == 0
    assert result.stdout.endswith(
        f"learning: the SessionEnd hook queues each finished session into {store.parent / 'learn'}"
        "; `active-memory learn status` lists them\n"
    )
    removed = run_cli(["hooks", "uninstall", "--harness", "claude", "--project", str(project)])
    assert removed.stdout == (
        f"removed: active-memory's claude hooks in {project / '.claude' / 'settings.local.json'}\n"
    )
    refused = run_cli(["hooks", "install", "--harness", "cursor", "--learn"])
    assert refused.exit_code == 2
    assert refused.stderr == (
        "error: --learn is for harness hooks; an MCP client has no session-end hook\n"
    )
