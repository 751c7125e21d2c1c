"""``hooks install`` meeting a FIFO where it reads: one sentence and exit 2, never a hang.

Codex's ``config.toml``, the checkout's ``.git/info/exclude`` (git itself waits on a FIFO there)
and the file being replaced are each tried for real, through the CLI in its own process with a
time limit: what failed was that it never exited.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
SRC = Path(__file__).resolve().parents[2] / "src"


def _install(tmp_path: Path, harness: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CODEX_")}
    return subprocess.run(
        [sys.executable, "-m", "active_memory.cli.main", "hooks", "install", "--harness",
         harness, "--project", str(tmp_path / "project"), "--store",
         str(tmp_path / "state" / "lessons.sqlite3")],
        capture_output=True, text=True, timeout=60,
        env={**env, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(SRC)},
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    git.Repo.init(tmp_path / "project")
    return tmp_path / "project"


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def _assert_refused(done: subprocess.CompletedProcess[str], fifo: Path) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: {str(fifo)!r} is a FIFO (named pipe), not a regular")
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_a_fifo_as_codex_config_toml_is_refused(tmp_path: Path, project: Path) -> None:
    fifo = _fifo(tmp_path / "home" / ".codex" / "config.toml")
    _assert_refused(_install(tmp_path, "codex"), fifo)


def test_a_fifo_as_the_git_exclude_file_is_refused_before_git_runs(
    tmp_path: Path, project: Path
) -> None:
    fifo = _fifo(project / ".git" / "info" / "exclude")
    _assert_refused(_install(tmp_path, "pi"), fifo)
    assert not (project / ".pi").exists()


def test_a_fifo_where_the_pi_extension_goes_is_refused(tmp_path: Path, project: Path) -> None:
    fifo = _fifo(project / ".pi" / "extensions" / "active-memory.ts")
    _assert_refused(_install(tmp_path, "pi"), fifo)
