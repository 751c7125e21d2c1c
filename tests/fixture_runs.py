"""Helpers for the recorded runs in tests/fixtures/runs/.

Each run folder holds ``run.json``, ``transcripts/*.jsonl`` and ``checkout/``: the repository's
files as plain files (no .git). ``materialize`` copies a run to a temporary folder, turns its
checkout into a real git repository (init + one commit) and records that commit in run.json.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git

FIXTURES = Path(__file__).parent / "fixtures"
RUNS = FIXTURES / "runs"
CLAUDE = FIXTURES / "claude"
RUN_NAMES = ("clean-success", "retry-and-review", "map-verbose-reviewer")


def materialize(name: str, destination: Path) -> tuple[Path, str]:
    """Copy run ``name`` under ``destination``; returns (record folder, checkout commit)."""
    folder = destination / name
    shutil.copytree(RUNS / name, folder)
    repo = git.Repo.init(folder / "checkout")
    with repo.config_writer() as config:
        config.set_value("user", "name", "Fixture")
        config.set_value("user", "email", "fixture@example.invalid")
    repo.git.add(A=True)
    repo.index.commit("recorded checkout")
    commit = repo.head.commit.hexsha
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text("utf-8"))
    data["checkout"]["commit"] = commit
    run_file.write_text(json.dumps(data, indent=2), "utf-8")
    return folder, commit
