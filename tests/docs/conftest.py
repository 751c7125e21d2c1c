"""What the pages' blocks run on: the demo's folder, made once per test run (shared by the
xdist workers), and a private copy of it per test, so no test sees another's writes."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from docs.pages import claim
from docs.transcript import environment, run_script
from isolation import isolate_environment

# The page's own command makes the session's demo; every demo-based block then runs on a copy.
DEMO = claim("docs/postmortem.md", "demo")
DEMO_DIR = "/tmp/am-demo"  # where the pages put it
TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
STAND_IN = TESTS / "agents" / "loopback_model.py"


@dataclass(frozen=True)
class Demo:
    folder: Path  # never written by a test: copy it with the `demo` fixture
    printed: str  # what the command printed, read back with the page's paths


@pytest.fixture(scope="session")
def demo_made(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """The page's demo, made once per test run: under pytest-xdist the first worker to need it
    makes it (about 1.5 CPU-s) and the others, waiting on a lock, read what it printed."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's own folder, which every worker's basetemp is under
    root = root / "demo-session"
    root.mkdir(exist_ok=True)
    folder, printed = root / "am-demo", root / "printed.txt"
    with (root / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not printed.exists():  # written last: a worker that failed midway left none
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(root / "isolated", ignore_errors=True)
            # Session-scoped, so the autouse isolation of each test is not in force yet.
            with pytest.MonkeyPatch.context() as patch:
                isolate_environment(patch, root / "isolated")
                shown = run_script(DEMO, root, aliases={DEMO_DIR: str(folder)})
            printed.write_bytes(shown.encode("utf-8"))  # bytes: read back exactly as printed
        return Demo(folder, printed.read_bytes().decode("utf-8"))


@pytest.fixture
def demo(demo_made: Demo, tmp_path: Path) -> Path:
    """A private copy of the demo folder, at ``tmp_path / "am-demo"``."""
    copy = tmp_path / "am-demo"
    shutil.copytree(demo_made.folder, copy, symlinks=True)
    return copy


def fixtures(folder: Path, *names: str) -> Path:
    """Copies of ``tests/fixtures/<name>`` under ``folder``, where a clone of the repository has
    them, so a page's ``tests/fixtures/...`` paths work and nothing writes into the repository."""
    for name in names:
        shutil.copytree(FIXTURES / name, folder / "tests" / "fixtures" / name, symlinks=True)
    return folder


@pytest.fixture
def stand_in() -> Iterator[str]:
    """The loopback stand-in model the pages start (tests/agents/loopback_model.py), as a
    program of its own on a free port; its host:port."""
    yield from _serve_stand_in()


@pytest.fixture
def text_calls_stand_in() -> Iterator[str]:
    """The stand-in writing every call as JSON text, as small models do (``--text-calls``)."""
    yield from _serve_stand_in("--text-calls")


def _serve_stand_in(*flags: str) -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, str(STAND_IN), "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=environment(),
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip().removeprefix("http://")
    finally:
        server.terminate()
        server.wait(timeout=10)
