"""The commands ``hooks install`` writes fail soft at the shell level and answer exactly once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.hooks.commands import claude_command, curl_command, fail_soft
from active_memory.hooks.install import Installation, helper_command, install_hooks
from active_memory.hooks.standalone import Server, ServeState
from folder_copies import package_copy
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
STORE = Path("/home/dev/.local/state/active-memory/lessons.sqlite3")
CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith(("ACTIVE_MEMORY_", "COPILOT_"))}  # fmt: skip


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeState]:
    backend = FakeBackend(widgets_lessons())
    with Server(backend, WORKSPACE, state_dir=tmp_path / "serve", store=str(STORE),
                repository=REPOSITORY) as server:  # fmt: skip
        yield server.state()


def install(harness: str, tmp_path: Path, **options: object) -> Installation:
    return install_hooks(harness, workspace=Path(WORKSPACE), store=STORE, home=tmp_path / "home",
                         **options)  # type: ignore[arg-type]  # fmt: skip


def written_command(done: Installation) -> str:
    hooks = json.loads(done.path.read_text())["hooks"]
    if done.harness == "copilot":
        return hooks["preToolUse"][0]["bash"]  # type: ignore[no-any-return]
    return hooks["PreToolUse"][-1]["hooks"][0]["command"]  # type: ignore[no-any-return]


def run_soft(command: str, payload: bytes, env: dict[str, str] | None = None) -> bytes:
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                          timeout=20, env=env or CLEAN_ENV)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


PAYLOADS = {
    "claude": "claude/read.json",
    "codex": "codex/bash.json",
    "copilot": "copilot/view.json",
}


@pytest.mark.parametrize("harness", ["claude", "codex", "copilot"])
@pytest.mark.parametrize("gone", ["interpreter", "package", "ticket", "store", "everything"])
def test_a_helper_command_with_a_piece_gone_prints_empty_and_exits_0(
    tmp_path: Path, harness: str, gone: str
) -> None:
    python = tmp_path / "venv" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    site = package_copy(tmp_path / "site")  # the package elsewhere, as a venv holds it
    store = tmp_path / "state" / "lessons.sqlite3"
    # The command as the copied package writes it, run by the linked interpreter: the
    # helper_command `hooks install` calls, from its own module (install's imports would cost
    # the start ~0.12 CPU-s more and change nothing it writes).
    script = (
        "import sys\nfrom active_memory.hooks.commands import helper_command\n"
        "harness, store, workspace, ticket = sys.argv[1:]\n"
        "print(helper_command(harness, store=store, workspace=workspace, ticket=ticket))\n"
    )
    ticket = tmp_path / "serve" / "w.ticket"
    command = subprocess.run(
        [str(python), "-c", script, harness, str(store), WORKSPACE, str(ticket)],
        env={**CLEAN_ENV, "PYTHONPATH": str(site)}, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert str(python) in command
    assert str(site) in command
    if gone in ("interpreter", "everything"):
        python.unlink()
    if gone in ("package", "everything"):
        shutil.rmtree(site)
    # "ticket" and "store": neither was ever created; the helper falls back, then answers {}.
    payload = (FIXTURES / PAYLOADS[harness]).read_bytes()
    assert run_soft(command, payload) == b"{}\n"


@pytest.mark.parametrize("harness", ["claude", "codex", "copilot"])
def test_a_curl_command_without_curl_or_ticket_prints_empty(
    tmp_path: Path, serve: ServeState, harness: str
) -> None:
    done = install(harness, tmp_path, project=tmp_path / "p", serve=serve)
    command = written_command(done)  # type: ignore[arg-type]
    payload = (FIXTURES / PAYLOADS[harness]).read_bytes()
    assert lesson_id(1 if harness != "codex" else 6) in run_soft(command, payload).decode()
    empty_path = tmp_path / "no-curl"
    empty_path.mkdir()
    no_curl = {**CLEAN_ENV, "PATH": str(empty_path)}
    sh = shutil.which("sh")
    assert sh is not None
    done_without = subprocess.run([sh, "-c", command], input=payload, capture_output=True,
                                  timeout=20, env=no_curl)  # fmt: skip
    assert (done_without.returncode, done_without.stdout) == (0, b"{}\n")
    os.unlink(serve.ticket)
    assert run_soft(command, payload) == b"{}\n"


@pytest.mark.parametrize(
    ("program", "printed"),
    [
        ("printf '%s' '{\"additionalContext\": \"x\"}'", b'{"additionalContext": "x"}\n'),
        # An answer printed, then a failure: not relayed, and {} not appended to it.
        ('sh -c \'printf %s "{\\"additionalContext\\": \\"x\\"}"; exit 3\'', b"{}\n"),
        ('sh -c \'printf %s "{\\"additionalCon"; kill -9 $$\'', b"{}\n"),  # killed mid-answer
        ("true", b"{}\n"),  # exit 0 with nothing printed
        ("/nonexistent/python3 -I -S helper.py claude", b"{}\n"),
    ],
)
def test_the_answer_is_printed_exactly_once(program: str, printed: bytes) -> None:
    assert run_soft(fail_soft(program), b"{}") == printed


def test_a_claude_hook_stays_silent_under_copilot_when_copilot_has_its_own(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".github" / "hooks").mkdir(parents=True)
    command = claude_command("printf '%s' '{\"x\": 1}'")
    under_copilot = {**CLEAN_ENV, "COPILOT_CLI": "1", "COPILOT_PROJECT_DIR": str(project),
                     "COPILOT_HOME": str(tmp_path / "copilot-home")}  # fmt: skip
    # Copilot without active-memory's own hook: the Claude hook serves it.
    assert run_soft(command, b"{}", under_copilot) == b'{"x": 1}\n'
    (project / ".github" / "hooks" / "active-memory.json").write_text("{}")
    assert run_soft(command, b"x" * 200_000, under_copilot) == b"{}\n"  # stdin read whole
    (project / ".github" / "hooks" / "active-memory.json").unlink()
    user_level = tmp_path / "copilot-home" / "hooks" / "active-memory.json"
    user_level.parent.mkdir(parents=True)
    user_level.write_text("{}")
    assert run_soft(command, b"{}", under_copilot) == b"{}\n"
    # Claude Code itself (no COPILOT_CLI): the hook runs.
    assert run_soft(command, b"{}", {**CLEAN_ENV, "COPILOT_HOME": str(tmp_path / "copilot-home")}) \
        == b'{"x": 1}\n'  # fmt: skip


def test_only_claude_commands_carry_the_copilot_guard() -> None:
    assert "COPILOT_CLI" in helper_command("claude")
    assert "COPILOT_CLI" in curl_command("claude", "/t.ticket")
    for harness in ("codex", "copilot"):
        assert "COPILOT_CLI" not in helper_command(harness)
        assert "COPILOT_CLI" not in curl_command(harness, "/t.ticket")
