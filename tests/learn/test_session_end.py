"""The session-end hook: one queue entry per finished session, written atomically, nothing for a
specialist's or an excluded repository's session, exit 0 and no output whatever happens, and
only the interpreter's built-in modules imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from active_memory.evidence.inventory_scan import SPECIALIST_SESSION_REASON
from active_memory.harnesses import HARNESS_NAMES
from active_memory.lanes import SPECIALIST_SESSION_MARKER, SPECIALIST_SESSION_VARIABLE
from active_memory.learn import session_end
from active_memory.learn.folder import LearnFolder

EVENT = Path(session_end.__file__)
CLEAN_ENV = {
    key: value for key, value in os.environ.items() if not key.startswith("ACTIVE_MEMORY_")
}


def run_event(
    harness: str, payload: bytes, folder: Path, env: dict[str, str] | None = None, *extra: str
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-I", "-S", str(EVENT), harness, "--folder", str(folder), *extra]
    return subprocess.run(
        command, input=payload, capture_output=True, timeout=20, env={**CLEAN_ENV, **(env or {})}
    )


def session(tmp_path: Path, first: str = "fix the failing test") -> Path:
    path = tmp_path / "projects" / "-work-app" / "6f1d.jsonl"
    path.parent.mkdir(parents=True)
    line = {"type": "user", "message": {"role": "user", "content": first}}
    path.write_text(json.dumps(line) + "\n")
    return path


def claude_payload(path: Path, cwd: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "6f1d",
            "transcript_path": str(path),
            "cwd": str(cwd),
            "reason": "prompt_input_exit",
            "hook_event_name": "SessionEnd",
        }
    ).encode()


def test_the_copies_of_the_tables_names_are_in_step() -> None:
    assert session_end.HARNESSES == HARNESS_NAMES
    assert session_end.SPECIALIST_SESSION_VARIABLE == SPECIALIST_SESSION_VARIABLE
    assert session_end.SPECIALIST_SESSION_MARKER == SPECIALIST_SESSION_MARKER
    assert session_end.SPECIALIST_SESSION_REASON == SPECIALIST_SESSION_REASON


def test_a_finished_session_is_queued_once_as_one_entry(tmp_path: Path) -> None:
    path = session(tmp_path)
    folder = tmp_path / "state" / "learn"
    for _ in range(2):  # a second end of the same session rewrites its entry
        done = run_event("claude", claude_payload(path, tmp_path), folder)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    [(key, entry)] = LearnFolder(folder).queued_entries()
    assert entry.harness == "claude"
    assert entry.session_file == str(path)
    assert (entry.session_id, entry.cwd, entry.end_reason) == (
        "6f1d",
        str(tmp_path),
        "prompt_input_exit",
    )
    assert len(key) == 32
    assert [p.name for p in (folder / "queue").iterdir()] == [f"{key}.json"]  # no temporaries
    assert (folder / "queue").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("layout", ["abc-123/events.jsonl", "abc-123.jsonl"])
def test_copilot_names_its_session_by_id_and_the_file_is_found_under_its_home(
    tmp_path: Path, layout: str
) -> None:
    home = tmp_path / "copilot-home"
    path = home / "session-state" / layout
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"type":"session.start"}\n')
    payload = json.dumps(
        {"sessionId": "abc-123", "cwd": str(tmp_path), "reason": "complete", "timestamp": 1}
    ).encode()
    done = run_event("copilot", payload, tmp_path / "learn", {"COPILOT_HOME": str(home)})
    assert done.returncode == 0
    [(_, entry)] = LearnFolder(tmp_path / "learn").queued_entries()
    assert (entry.session_file, entry.session_id, entry.end_reason) == (
        str(path),
        "abc-123",
        "complete",
    )


def test_a_specialist_session_is_never_queued(tmp_path: Path) -> None:
    by_marker = session(tmp_path, f"{SPECIALIST_SESSION_MARKER}\nreview the run")
    folder = tmp_path / "learn"
    run_event("claude", claude_payload(by_marker, tmp_path), folder)
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"type":"user"}\n')
    run_event("claude", claude_payload(plain, tmp_path), folder, {SPECIALIST_SESSION_VARIABLE: "1"})
    assert LearnFolder(folder).queued_entries() == []


@pytest.mark.parametrize("ignored", ["app", "checkout", "{checkout}"])
def test_a_session_in_an_ignored_repository_is_never_queued(tmp_path: Path, ignored: str) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    cwd = checkout / "app"
    cwd.mkdir()
    folder = tmp_path / "learn"
    folder.mkdir()
    value = ignored.format(checkout=checkout)
    (folder / "config.json").write_text(json.dumps({"ignore_repos": [value]}))
    run_event("claude", claude_payload(session(tmp_path), cwd), folder)
    assert LearnFolder(folder).queued_entries() == []
    (folder / "config.json").write_text(json.dumps({"ignore_repos": ["other"]}))
    run_event("claude", claude_payload(session(tmp_path / "b"), cwd), folder)
    assert len(LearnFolder(folder).queued_entries()) == 1


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"not json",
        b"[]",
        b'{"transcript_path": "relative.jsonl"}',
        b'{"transcript_path": "/nonexistent/x.jsonl"}',
        b'{"a": 1, "a": 2}',
    ],
)
def test_anything_else_queues_nothing_prints_nothing_and_exits_0(
    tmp_path: Path, payload: bytes
) -> None:
    done = run_event("claude", payload, tmp_path / "learn")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (tmp_path / "learn").exists()


def test_no_folder_or_an_unknown_harness_exits_0(tmp_path: Path) -> None:
    payload = claude_payload(session(tmp_path), tmp_path)
    for argv in (["claude"], ["cursor", "--folder", str(tmp_path / "learn")]):
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(EVENT), *argv],
            input=payload,
            capture_output=True,
            timeout=20,
            env=CLEAN_ENV,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not (tmp_path / "learn").exists()


def test_the_worker_is_started_detached_with_its_output_in_the_log(tmp_path: Path) -> None:
    """``--python`` names the interpreter the worker runs under; a stand-in script records
    the arguments and that it runs in a session of its own."""
    stand_in = tmp_path / "python"
    stand_in.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "print(sys.argv[1:], os.getsid(0) == os.getpid(), flush=True)\n"
    )
    stand_in.chmod(0o755)
    folder = tmp_path / "learn"
    store = tmp_path / "lessons.sqlite3"
    run_event(
        "claude",
        claude_payload(session(tmp_path), tmp_path),
        folder,
        None,
        "--store",
        str(store),
        "--python",
        str(stand_in),
    )
    log = folder / "worker.log"
    for _ in range(200):
        if log.exists() and log.read_text():
            break
        subprocess.run(["sleep", "0.05"], check=True)
    assert log.read_text() == (
        f"{['-m', 'active_memory.cli.main', 'learn', 'run', '--quiet', '--store', str(store)]} "
        "True\n"
    )


def imported_modules(payload: bytes, *args: str) -> set[str]:
    command = [sys.executable, "-X", "importtime", "-I", "-S", *args]
    done = subprocess.run(command, input=payload, capture_output=True, timeout=20, env=CLEAN_ENV)
    return {
        line.split("|")[-1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_the_event_imports_nothing_beyond_the_bare_interpreter_but_builtins(
    tmp_path: Path,
) -> None:
    bare = imported_modules(b"", "-c", "pass")
    path = session(tmp_path)
    command = [str(EVENT), "claude", "--folder", str(tmp_path / "learn")]
    extra = imported_modules(claude_payload(path, tmp_path), *command) - bare
    assert LearnFolder(tmp_path / "learn").queued_entries(), "the session was queued"
    sha = "_sha2" if sys.version_info >= (3, 12) else "_sha256"
    assert extra <= {"__future__", "_json", sha}
    assert not extra & {"json", "os", "subprocess", "pydantic", "asyncio", "threading", "re"}


FIXTURES = Path(__file__).parents[1] / "fixtures"
SESSIONS = {
    "claude": FIXTURES / "claude" / "inline-sidechain.jsonl",
    "codex": FIXTURES
    / "codex"
    / "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
    "codex-legacy": FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl",
    "copilot": FIXTURES
    / "copilot"
    / "session-state"
    / "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47"
    / "events.jsonl",
    "pi": FIXTURES / "pi" / "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl",
}
QUOTED = json.dumps({"type": "note", "text": f"{SPECIALIST_SESSION_MARKER} quoted"}) + "\n"


def _initial_input(harness: str, path: Path, scratch: Path) -> str:
    from active_memory.evidence.sources import open_run_source

    record = open_run_source(path, scratch, harness)
    assert record.initial_input is not None
    return record.initial_input


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_hook_and_the_worker_agree_on_which_sessions_are_a_specialists(
    tmp_path: Path, name: str
) -> None:
    """The hook finds the first user message as each harness's converter does, and both apply
    opens_with_marker: marked when the marker opens it, not when the session only quotes it."""
    harness = name.split("-")[0]
    original = SESSIONS[name].read_text("utf-8")
    asked = _initial_input(harness, SESSIONS[name], tmp_path / "original")
    found = session_end.first_message(harness, original.encode())
    assert found is not None
    assert asked.startswith(found.split("\n")[0])
    opening = json.dumps(asked[:30])[1:-1]
    marked = tmp_path / f"marked-{SESSIONS[name].name}"
    marked.write_text(original.replace(opening, SPECIALIST_SESSION_MARKER + "\\n\\n" + opening))
    quoted = tmp_path / f"quoted-{SESSIONS[name].name}"
    quoted.write_text(original + QUOTED)
    for path, specialist in ((marked, True), (quoted, False)):
        initial = _initial_input(harness, path, tmp_path / path.stem)
        assert session_end.opens_with_marker(initial) is specialist
        head = path.read_bytes()[: session_end.MARKER_WINDOW_BYTES]
        assert session_end.opens_with_marker(session_end.first_message(harness, head)) is specialist


def test_a_session_that_quotes_the_marker_is_queued(tmp_path: Path) -> None:
    """A session that read this very module: the marker starts a JSON string in a tool result."""
    path = session(tmp_path)
    result = {"type": "tool_result", "tool_use_id": "t1",
              "content": f'SPECIALIST_SESSION_MARKER = "{SPECIALIST_SESSION_MARKER}"'}  # fmt: skip
    line = {"type": "user", "message": {"role": "user", "content": [result]}}
    with path.open("a") as out:
        out.write(json.dumps(line) + "\n")
    folder = tmp_path / "learn"
    run_event("claude", claude_payload(path, tmp_path), folder)
    [(_, entry)] = LearnFolder(folder).queued_entries()
    assert entry.session_file == str(path)


def test_a_session_skipped_by_its_marker_is_listed_as_skipped(tmp_path: Path) -> None:
    path = session(tmp_path, f"{SPECIALIST_SESSION_MARKER}\n\nreview the run")
    folder = LearnFolder(tmp_path / "learn")
    done = run_event("claude", claude_payload(path, tmp_path), folder.path)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert folder.queued_entries() == []
    [state] = folder.states()
    assert (state.state, state.code, state.session_file) == (
        "skipped",
        "specialist_session",
        str(path),
    )
    assert state.reason == SPECIALIST_SESSION_REASON
    assert (state.session_id, state.end_reason) == ("6f1d", "prompt_input_exit")
