"""docs/memory-init.md: a session of three calls on a machine with sessions in two checkouts
and a dirty one, the host agent's answers written between the calls as the skill's would be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs.pages import claim
from docs.scenes import Scene
from history_init.kit import claude_session, codex_session, keep_everything, make_repo, read_task

PAGE = "docs/memory-init.md"
CALLS = [claim(PAGE, name) for name in ("first-call", "second-call", "third-call")]
SESSION = ".local/state/active-memory/init/2026-12-02"  # under HOME, as the page's `~/`


def _machine(home: Path) -> None:
    """shop-api with two Claude sessions, shop-web with a Codex one, and a Codex session in
    scratch, a checkout with an untracked file (so the run is excluded as dirty)."""
    code = home / "code"
    for name in ("shop-api", "shop-web", "scratch"):
        make_repo(code / name, f"git@github.com:acme/{name}.git")
    for number in (1, 2):
        claude_session(home, code / "shop-api", number)
    codex_session(home, code / "shop-web", 2, "git@github.com:acme/shop-web.git")
    codex_session(home, code / "scratch", 3, "git@github.com:acme/scratch.git")
    (code / "scratch" / "notes.txt").write_text("work in progress\n", "utf-8")


def _answer_open_tasks(session: Path) -> int:
    """What the host agent does between calls: a response for every open task."""
    answered = 0
    for task_file in sorted(session.glob("tasks/*/task.json")):
        if (task_file.parent / "response.json").exists():
            continue
        task = read_task(str(task_file)) | {"task_file": str(task_file)}
        (task_file.parent / "response.json").write_text(json.dumps(keep_everything(task)))
        answered += 1
    return answered


@pytest.mark.slow
def test_a_session_of_three_calls_prints_what_the_page_shows(tmp_path: Path) -> None:
    """Slow: each call is a process of its own, and the first converts four sessions (about
    4 s on two cores)."""
    home = tmp_path / "home"
    _machine(home)
    # The default state directory under this HOME, as on the page.
    env = {"HOME": str(home), "ACTIVE_MEMORY_STATE_DIR": str(home / ".local/state/active-memory")}
    scene = Scene(tmp_path, env, {"/home/dev": str(home)})
    first, second, third = CALLS
    scene.run(first)
    assert _answer_open_tasks(home / SESSION) == 6
    scene.run(second)
    assert _answer_open_tasks(home / SESSION) == 2
    scene.run(third)
