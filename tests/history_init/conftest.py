"""A temporary machine for memory init: HOME, state folder, checkouts, sessions, a store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from active_memory.store.paths import state_dir_variable
from cli_runner import run_cli
from history_init.kit import make_repo

SRC = Path(__file__).resolve().parents[2] / "src"


@dataclass
class Machine:
    root: Path
    home: Path
    state: Path
    session: Path
    store: Path
    repos: dict[str, Path] = field(default_factory=dict)

    def repo(self, name: str, remote: str | None = "default") -> Path:
        url = f"git@github.com:acme/{name}.git" if remote == "default" else remote
        path = make_repo(self.root / "repos" / name, url)
        self.repos[name] = path
        return path

    def args(self, *extra: str) -> list[str]:
        return ["memory", "init", "--dir", str(self.session), "--store", str(self.store),
                "--json", *extra]  # fmt: skip

    def init(self, *extra: str) -> Result:
        return run_cli(self.args(*extra))

    def answer(self, *extra: str) -> dict[str, Any]:
        result = self.init(*extra)
        assert result.exit_code == 0, result.stderr
        data: dict[str, Any] = json.loads(result.stdout)
        return data

    def process(
        self, *extra: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The same call in a separate process (a real pid for locks and SIGKILL)."""
        environment = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
        command = [sys.executable, "-m", "active_memory.cli.main", *self.args(*extra)]
        return subprocess.run(command, capture_output=True, text=True, env=environment,
                              timeout=300, check=False)  # fmt: skip


@pytest.fixture
def machine(tmp_path: Path, isolated_state: dict[str, Path]) -> Machine:
    home, state = isolated_state["HOME"], isolated_state[state_dir_variable()]
    return Machine(
        tmp_path, home, state, tmp_path / "session", tmp_path / "store" / "lessons.sqlite3"
    )


Driver = Callable[[dict[str, Any]], dict[str, Any]]
