"""pi's session end: the extension ``hooks install --harness pi --learn`` writes starts the
session-end hook when pi leaves a session (quit, /new, /resume, /fork), never on a reload, and
never throws (run under node; skipped where node is missing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from active_memory.hooks.install import install_hooks
from active_memory.learn.folder import LearnFolder

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

DRIVER = """
const [extension, reason, file] = process.argv.slice(2);
const { default: register } = await import(extension);
const handlers = {};
register({ on(name, handler) { handlers[name] = handler; } });
const ctx = { cwd: "/work/app", sessionManager: { getSessionFile: () => file } };
await handlers.session_shutdown({ reason }, ctx);
console.log("returned");
"""


def _extension(tmp_path: Path) -> Path:
    done = install_hooks("pi", workspace=tmp_path, store=tmp_path / "s.sqlite3",
                         project=tmp_path, home=tmp_path / "home", learn=True,
                         learn_dir=tmp_path / "learn")  # fmt: skip
    text = done.path.read_text()
    # The worker it starts is /bin/true here: this test is about the queueing.
    start = text.index("const LEARN_COMMAND = ") + len("const LEARN_COMMAND = ")
    literal = text[start : text.index(";\n", start)]
    argv = json.loads(json.loads(literal))
    argv[argv.index("--python") + 1] = "/bin/true"
    text = text[:start] + json.dumps(json.dumps(argv)) + text[start + len(literal) :]
    copy = tmp_path / "active-memory.mjs"
    copy.write_text(text)
    (tmp_path / "driver.mjs").write_text(DRIVER)
    return copy


def _shutdown(extension: Path, reason: str, file: Path) -> None:
    driver = extension.with_name("driver.mjs")
    command = [str(NODE), str(driver), str(extension), reason, str(file)]
    environ = {k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, env=environ)
    assert (done.returncode, done.stdout, done.stderr) == (0, "returned\n", "")


def test_leaving_a_pi_session_queues_its_file_and_a_reload_does_not(tmp_path: Path) -> None:
    extension = _extension(tmp_path)
    session = tmp_path / "sessions" / "--work-app--" / "2025-12-01_019a.jsonl"
    session.parent.mkdir(parents=True)
    session.write_text('{"type":"session","id":"019a"}\n')
    folder = LearnFolder(tmp_path / "learn")
    _shutdown(extension, "reload", session)
    time.sleep(0.5)
    assert folder.queued_entries() == []
    _shutdown(extension, "quit", session)
    deadline = time.monotonic() + 15
    while not folder.queued_entries() and time.monotonic() < deadline:
        time.sleep(0.1)
    [(_, entry)] = folder.queued_entries()
    assert (entry.harness, entry.session_file, entry.cwd, entry.end_reason) == (
        "pi", str(session), "/work/app", "quit")  # fmt: skip


def test_a_missing_session_file_or_no_command_never_throws(tmp_path: Path) -> None:
    extension = _extension(tmp_path)
    _shutdown(extension, "quit", tmp_path / "missing.jsonl")
    shipped = install_hooks("pi", workspace=tmp_path, store=tmp_path / "s.sqlite3",
                            project=tmp_path / "other", home=tmp_path / "home",
                            learn=False)  # fmt: skip
    plain = tmp_path / "plain.mjs"
    plain.write_text(shipped.path.read_text())
    _shutdown(plain, "quit", tmp_path / "missing.jsonl")
    assert LearnFolder(tmp_path / "learn").queued_entries() == []
