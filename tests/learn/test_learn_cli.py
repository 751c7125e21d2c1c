"""``hooks install --learn`` and ``active-memory learn``: a Claude Code session that ends is
queued by the installed hook, reviewed once by the detached worker on the claude-code lane (the
fake ``claude``), and listed by ``learn status``; the settings are checked as they are set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from active_memory.learn.folder import LearnFolder
from active_memory.store.paths import default_store_path
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from fake_claude import install_fake_claude, logged_out, success
from history_init.kit import claude_session, make_repo

pytestmark = pytest.mark.timeout(120)


def cli(*args: str | Path) -> Any:
    result = run_cli(list(args))
    return result


def state_dir() -> Path:
    """The folder of the default store, which the learn folder sits in."""
    return default_store_path().parent


def folder_of(state: Path) -> LearnFolder:
    return LearnFolder(state / "learn")


def session_end_command(settings: Path) -> str:
    document = json.loads(settings.read_text())
    [group] = document["hooks"]["SessionEnd"]
    [hook] = group["hooks"]
    assert (hook["type"], hook["timeout"]) == ("command", 5)
    command: str = hook["command"]
    return command


def end_session(command: str, session: Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """What Claude Code does at a session's end: run the hook with the payload on stdin."""
    payload = {"session_id": session.stem, "transcript_path": str(session), "cwd": str(cwd),
               "reason": "prompt_input_exit", "hook_event_name": "SessionEnd"}  # fmt: skip
    return subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(),
                          capture_output=True, timeout=30, cwd=cwd)  # fmt: skip


def wait_for(folder: LearnFolder, state: str, timeout: float = 60) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = json.loads(cli("learn", "status", "--json").stdout)["sessions"]
        if listed and all(entry["state"] == state for entry in listed):
            return list(listed)
        time.sleep(0.2)
    raise AssertionError(f"never {state}: {listed}; log: {_log(folder)}")


def _log(folder: LearnFolder) -> str:
    return folder.log.read_text() if folder.log.exists() else "(no log)"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "order-service", remote=None)


def test_an_ended_claude_session_is_queued_reviewed_once_and_listed(
    tmp_path: Path, project: Path, isolated_state: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, state = isolated_state["HOME"], state_dir()
    fake = install_fake_claude(tmp_path / "fake", [success({"lessons": []})])
    monkeypatch.setenv("PATH", fake.path)
    # The detached worker runs this checkout's package, as the test does.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    assert cli("learn", "config", "--settle-seconds", "0").exit_code == 0
    installed = cli("hooks", "install", "--harness", "claude", "--project", project, "--learn")
    assert installed.exit_code == 0, installed.stderr
    assert f"learning: the SessionEnd hook queues each finished session into {state / 'learn'}" in (
        installed.stdout
    )
    command = session_end_command(project / ".claude" / "settings.local.json")
    session = claude_session(home, project, 1)
    ended = end_session(command, session, project)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, b"", b"")
    [done] = wait_for(folder_of(state), "done")
    assert done["session_file"] == str(session)
    assert done["harness"] == "claude"
    assert done["run_id"].startswith("claude-")
    assert done["lessons"] == []
    [call] = fake.calls()  # repository_discovery, the one specialist with work, on the lane
    assert call["argv"][0] == "-p"
    assert call["env"]["ACTIVE_MEMORY_SPECIALIST_SESSION"]
    # The same session ends again unchanged: its content was reviewed, nothing runs.
    end_session(command, session, project)
    [again] = wait_for(folder_of(state), "skipped")
    assert again["code"] == "duplicate"
    assert len(fake.calls()) == 1
    text = cli("learn", "status").stdout
    assert f"skipped  claude   ~/{session.relative_to(home)}\n" in text
    assert "    duplicate: a postmortem already reviewed this exact content\n" in text


def test_a_logged_out_claude_is_the_sessions_failure_cause(
    tmp_path: Path, project: Path, isolated_state: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_claude(tmp_path / "fake", [logged_out()])
    monkeypatch.setenv("PATH", fake.path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    cli("learn", "config", "--settle-seconds", "0")
    session = claude_session(isolated_state["HOME"], project, 2)
    assert cli("learn", "queue", session).exit_code == 0
    ran = cli("learn", "run")
    assert list(scratch.iterdir()) == []  # the session's private copy is erased
    assert ran.stdout == "learn worker: 1 failed; `active-memory learn status` lists them\n"
    [failed] = json.loads(cli("learn", "status", "--json").stdout)["sessions"]
    assert failed["state"] == "failed"
    assert failed["code"] == "harness_logged_out"
    assert "run `claude auth login`" in failed["reason"]


def test_an_ignored_repository_is_skipped_by_the_worker(
    tmp_path: Path, project: Path, isolated_state: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    cli("learn", "config", "--settle-seconds", "0", "--ignore-repos", "order-service")
    cli("learn", "queue", claude_session(isolated_state["HOME"], project, 3))
    cli("learn", "run")
    assert list(scratch.iterdir()) == []
    [skipped] = json.loads(cli("learn", "status", "--json").stdout)["sessions"]
    assert (skipped["state"], skipped["code"]) == ("skipped", "excluded_repo")
    assert skipped["reason"] == "ignored by --ignore-repos 'order-service'"


def test_learn_config_shows_and_sets_the_settings(isolated_state: dict[str, Path]) -> None:
    shown = cli("learn", "config")
    assert shown.stdout == (
        "daily cap        20 postmortem(s) a day (UTC)\n"
        "settle time      10 s\n"
        "ignored repos    none\n"
        f"folder           {state_dir() / 'learn'}\n"
    )
    cli("learn", "config", "--daily-cap", "5", "--ignore-repos", "a", "--ignore-repos", "b")
    assert json.loads(cli("learn", "config", "--json").stdout) == {
        "daily_cap": 5, "settle_seconds": 10.0, "ignore_repos": ["a", "b"]}  # fmt: skip
    cleared = json.loads(cli("learn", "config", "--clear-ignore-repos", "--json").stdout)
    assert cleared["ignore_repos"] == []
    refused = cli("learn", "config", "--daily-cap", "-1")
    assert refused.exit_code == 2
    assert "--daily-cap" in refused.stderr


def test_a_broken_config_file_is_one_sentence_and_exit_2(isolated_state: dict[str, Path]) -> None:
    folder = state_dir() / "learn"
    folder.mkdir()
    (folder / "config.json").write_text('{"daily_cap": "many"}')
    result = cli("learn", "status")
    assert result.exit_code == 0  # status lists what there is; the settings are not needed
    listed = json.loads(cli("learn", "status", "--json").stdout)
    assert listed["config"] is None
    assert listed["config_problem"].startswith("learn config: ")
    result = cli("learn", "run")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: learn config: ")
    assert result.stderr.endswith("set it again with `active-memory learn config`\n")


def test_queueing_a_file_that_is_no_session_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    result = cli("learn", "queue", other)
    assert result.exit_code == 2
    assert result.stderr.endswith("; name the harness with --harness\n")
    assert result.stderr.count("\n") == 1


def test_status_with_nothing_queued_says_how_sessions_get_there() -> None:
    assert cli("learn", "status").stdout == (
        "no sessions queued yet: `active-memory hooks install --harness NAME --learn` queues "
        "each session as it ends\n"
    )


def test_a_second_learn_run_while_one_holds_the_lock_returns_at_once(
    isolated_state: dict[str, Path],
) -> None:
    from active_memory.learn.worker import held_lock

    with held_lock(folder_of(state_dir())):
        result = cli("learn", "run")
        quiet = cli("learn", "run", "--quiet")
    assert result.stdout == "another learn worker is running; it reviews the queue\n"
    assert (quiet.exit_code, quiet.stdout) == (0, "")


def test_serve_starts_a_worker_for_sessions_queued_while_none_ran(
    tmp_path: Path, project: Path, isolated_state: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake_claude(tmp_path / "fake", [success({"lessons": []})])
    monkeypatch.setenv("PATH", fake.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in sys.path if p))
    cli("learn", "config", "--settle-seconds", "0")
    cli("learn", "queue", claude_session(isolated_state["HOME"], project, 4))
    store = default_store_path()
    SqliteStore(store).close()  # serve reads a store that exists
    process = subprocess.Popen(
        [sys.executable, "-m", "active_memory.cli.main", "serve", "--repository", str(project),
         "--store", str(store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(5)]
        assert lines[-1] == (
            "learning: a worker reviews 1 queued session(s); `active-memory learn status` lists "
            "them\n"
        )
        [done] = wait_for(folder_of(state_dir()), "done")
        assert done["run_id"].startswith("claude-")
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.mark.parametrize("kind", ["fifo", "link to a fifo"])
def test_queueing_a_fifo_is_one_sentence_and_exit_2_and_nothing_is_queued(
    tmp_path: Path, kind: str
) -> None:
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    named = fifo
    if kind == "link to a fifo":
        named = tmp_path / "link.jsonl"
        named.symlink_to(fifo)
    result = cli("learn", "queue", named, "--harness", "claude")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: the session file {str(named)!r} is a FIFO (named pipe), not a regular file; "
        "pass a regular file\n"
    )
    assert folder_of(state_dir()).queued_entries() == []


def test_a_cap_of_0_is_shown_as_paused_by_config_and_status(
    isolated_state: dict[str, Path],
) -> None:
    shown = cli("learn", "config", "--daily-cap", "0")
    assert shown.stdout.startswith("daily cap        0: learning is paused, sessions stay queued\n")
    paused = (
        "learning is paused (daily cap 0): sessions stay queued until `active-memory learn "
        "config --daily-cap N` sets a cap above 0\n"
    )
    assert cli("learn", "status").stdout.startswith(paused)
    assert json.loads(cli("learn", "status", "--json").stdout)["paused"] is True
    cli("learn", "config", "--daily-cap", "1")
    assert not cli("learn", "status").stdout.startswith("learning is paused")
    assert json.loads(cli("learn", "status", "--json").stdout)["paused"] is False


@pytest.mark.timeout(60)
def test_learn_run_fails_a_queued_fifo_and_returns(tmp_path: Path) -> None:
    """A session file that became a FIFO after it was queued: the worker never opens it."""
    from active_memory.learn import session_end

    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    folder = folder_of(state_dir())
    session_end.write_entry(str(folder.path), "claude", str(fifo), {"reason": "other"})
    cli("learn", "config", "--settle-seconds", "0")
    ran = cli("learn", "run")
    assert (ran.exit_code, ran.stdout) == (
        0,
        "learn worker: 1 failed; `active-memory learn status` lists them\n",
    )
    assert cli("learn", "status").stdout.endswith(
        f"    session_unreadable: the session file {str(fifo)!r} is a FIFO (named pipe), not a "
        "regular file; queue a readable session file again with `active-memory learn queue "
        "FILE`\n"
    )


def test_a_purge_removes_the_lessons_title_from_the_sessions_that_published_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Purge is for a lesson that leaked a secret: the state of the session whose postmortem
    # published it keeps its title for `learn status`, beside the store.
    from active_memory.learn.folder import LessonTouched, SessionState
    from active_memory.models.changes import Mutation, Publication
    from recall.kit import lesson, lesson_id, seed_store

    store = tmp_path / "lessons.sqlite3"
    leaked = "Rotate the purple-walrus-4417 credential"
    kept = lesson(2, files=["src/b.py"], title="Kept")
    seed_store(store, [lesson(1, files=["src/app.py"], title=leaked), kept])
    folder = LearnFolder(tmp_path / "learn")
    touched = (LessonTouched(id=lesson_id(1), op="upsert", title=leaked),
               LessonTouched(id=lesson_id(2), op="upsert", title="Kept"))  # fmt: skip
    done = SessionState(harness="claude-code", session_file="/s.jsonl", queued_ms=1, key="k1",
                        state="done", lessons=touched, updated_ms=5)  # fmt: skip
    folder.put(done)
    before = folder.state("k1")
    with SqliteStore(store) as backend:
        backend.publish(Publication(run_id="run-2", mutations=(
            Mutation(op="retire", id=lesson_id(1), expected_revision=1),)))  # fmt: skip
    purged = cli("lessons", "purge", lesson_id(1), "--force", "--store", store)
    assert purged.exit_code == 0, purged.stderr
    assert not any(leaked.encode() in path.read_bytes() for path in folder.path.rglob("*.json"))
    after = folder.state("k1")
    assert before is not None
    assert after is not None
    assert after.lessons == (touched[0].model_copy(update={"title": None}), touched[1])
    assert after.updated_ms == before.updated_ms  # `learn status` keeps its order
    monkeypatch.setattr(LearnFolder, "forget_title", lambda folder, lesson_id: False)
    again = cli("lessons", "purge", lesson_id(1), "--force", "--store", store)
    assert again.exit_code == 0, again.stderr
    assert f"session states in {folder.sessions} could not all be rewritten" in again.stderr
