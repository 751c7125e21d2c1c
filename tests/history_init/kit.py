"""A machine with history: real git checkouts, harness sessions and saved run records in a
temporary HOME and state folder, and a scripted driver that answers exported tasks.

Sessions are the repository's own fixtures (tests/fixtures/claude, tests/fixtures/codex) with
their workspace pointed at a temporary checkout, and backdated so none is "in progress".
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git

from active_memory.evidence.sources import open_run_source
from checkouts import built_once, copy_built

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CLAUDE = FIXTURES / "claude" / "inline-sidechain.jsonl"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
)
_FIXTURE_CWD = "/home/dev/order-service"
_CODEX_ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
_CLAUDE_ID = "6f1d2c3b-4a5e-4f60-9a7b-8c9d0e1f2a3b"
_CODEX_REMOTE = "git@github.com:example/order-service.git"
HOUR = 3600.0


def make_repo(path: Path, remote: str | None) -> Path:
    """A clean checkout with one commit (a settings module and its test), and ``origin``.

    Built once per test process for each ``remote`` and copied: a copy costs about half the
    CPU of a new repository, and tests make a hundred of them."""
    template, _ = built_once(f"history-init {remote}", lambda folder: _new_repo(folder, remote))
    copy_built(template, path, ["."])
    return path


def _new_repo(path: Path, remote: str | None) -> Path:
    repo = git.Repo.init(path)
    with repo.config_writer() as config:
        config.set_value("user", "name", "Test")
        config.set_value("user", "email", "test@example.invalid")
    (path / "app").mkdir()
    (path / "app" / "settings.py").write_text(
        "APP_TIMEOUT = 5\n\ndef load_settings():\n    return {'timeout': APP_TIMEOUT}\n"
    )
    (path / "tests").mkdir()
    (path / "tests" / "test_config.py").write_text("def test_defaults():\n    assert True\n")
    repo.index.add(["app/settings.py", "tests/test_config.py"])
    repo.index.commit("first")
    if remote is not None:
        repo.create_remote("origin", remote)
    repo.close()
    return path


def _backdate(path: Path, age: float) -> None:
    moment = time.time() - age
    os.utime(path, (moment, moment))


def claude_session(home: Path, workspace: Path, number: int, age: float = 3 * HOUR) -> Path:
    session = f"{_CLAUDE_ID[:-4]}{number:04d}"
    text = CLAUDE.read_text("utf-8").replace(_FIXTURE_CWD, str(workspace))
    text = text.replace(_CLAUDE_ID, session)
    folder = home / ".claude" / "projects" / str(workspace).replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_text(text, "utf-8")
    _backdate(path, age)
    return path


def codex_session(
    home: Path, workspace: Path, number: int, remote: str, age: float = 2 * HOUR
) -> Path:
    session = f"{_CODEX_ID[:-4]}{number:04d}"
    text = CODEX.read_text("utf-8").replace(_FIXTURE_CWD, str(workspace))
    text = text.replace(_CODEX_ID, session).replace(_CODEX_REMOTE, remote)
    folder = home / ".codex" / "sessions" / "2025" / "11" / "20"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2025-11-20T09-00-{number:02d}-{session}.jsonl"
    path.write_text(text, "utf-8")
    _backdate(path, age)
    return path


def saved_record(
    state: Path,
    name: str,
    workspace: Path,
    repository: str,
    scratch: Path,
    age: float = HOUR,
    graph: str | None = None,
) -> Path:
    """A saved run record under ``<state>/runs/NAME``, converted from a Claude session, with a
    latched outcome and the recorded repository key ``repository``."""
    source = scratch / f"{name}.jsonl"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(
        CLAUDE.read_text("utf-8")
        .replace(_FIXTURE_CWD, str(workspace))
        .replace(_CLAUDE_ID, f"{_CLAUDE_ID[:-4]}9{len(name):03d}"),
        "utf-8",
    )
    folder = state / "runs" / name
    open_run_source(source, folder)
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text("utf-8"))
    data["run_id"] = f"saved-{name}"
    data["checkout"]["repository"] = repository
    data["outcome"] = {"status": "succeeded", "latched_ms": 1_700_000_000_000}
    if graph is not None:  # another authored graph: its hash follows from the new name
        data["graph"]["name"] = graph
        data.pop("graph_hash")
    run_file.write_text(json.dumps(data, indent=1), "utf-8")
    _backdate(run_file, age)
    return run_file


def read_task(task_file: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(task_file).read_text("utf-8"))
    return data


def discovery_lesson(task: dict[str, Any]) -> dict[str, Any]:
    """One repository lesson admission accepts: it cites the run's main execution and a
    tracked file of the checkout, and names that file."""
    return {
        "title": "Settings defaults live in app/settings.py",
        "recommendation": "Change APP_TIMEOUT in app/settings.py with tests/test_config.py.",
        "associations": {
            "files": ["app/settings.py"],
            "folders": [],
            "identifiers": [],
            "keyword_groups": [],
        },
        "node_id": task["nodes"][0],
        "references": [f"exec:{task['executions'][0]}", "repository:app/settings.py"],
        "reason": "The run changed the default and its test together.",
        "repository_specific": True,
    }


Answer = Callable[[dict[str, Any]], dict[str, Any]]


def keep_everything(task: dict[str, Any]) -> dict[str, Any]:
    """The scripted driver's answer: no lessons from graph discovery, one repository lesson per
    run, keep every supplied card and every staged finding."""
    if task["kind"] == "discovery":
        lessons = [] if task["specialist"] == "graph_discovery" else [discovery_lesson(task)]
        return {"task": task["task"], "digest": task["digest"], "answer": {"lessons": lessons}}
    supplied = json.loads((Path(task["task_file"]).parent / "supplied.json").read_text("utf-8"))
    staged = json.loads(Path(task["staged_file"]).read_text("utf-8"))["staged"]
    return {
        "task": task["task"],
        "digest": task["digest"],
        "answer": {
            "decisions": [
                {
                    "id": item["id"],
                    "action": "keep",
                    "reason": "still right",
                    "references": [],
                    "replacement": None,
                }
                for item in supplied
            ]
        },
        "staged": [{"id": item["id"], "action": "keep", "reason": "observed"} for item in staged],
    }
