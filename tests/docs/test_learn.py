"""docs/learn.md: the quick start's installs as a user runs them, and `learn status` after a
worker reviewed one session (the fake claude answers), failed one (it is logged out) and skipped
one of an ignored repository."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from docs.compare import compare
from docs.pages import Block, claim
from docs.scenes import Scene
from docs.transcript import BIN
from fake_claude import install_fake_claude, logged_out, success
from history_init.kit import claude_session, make_repo

PAGE = "docs/learn.md"
QUICK_START = [
    *(claim(PAGE, name) for name in ("quick-start-claude", "quick-start-codex")),
    claim("README.md", "quick-start"),
]
STATUS = claim(PAGE, "status")
STATE = ".local/state/active-memory"  # under HOME, the default state folder


def _scene(tmp_path: Path, path: str | None = None) -> Scene:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "ACTIVE_MEMORY_STATE_DIR": str(home / STATE)}
    if path is not None:
        env["PATH"] = path
    return Scene(tmp_path, env, {"/home/dev": str(home)})


# Blocks with the same transcript (the README's quick start is learn.md's for Claude Code) run
# once: the same commands in the same fresh scene print the same, and each page's copy is
# compared with what they printed.
SAME_TRANSCRIPT = list({block.body: [b for b in QUICK_START if b.body == block.body]
                        for block in QUICK_START}.values())  # fmt: skip


@pytest.mark.parametrize(
    "blocks", SAME_TRANSCRIPT, ids=lambda blocks: " = ".join(b.where for b in blocks)
)
def test_the_quick_start_installs_print_what_the_page_shows(
    tmp_path: Path, blocks: list[Block]
) -> None:
    first, *same = blocks
    printed = _scene(tmp_path).run(first)
    for block in same:
        compare(block, block.body, printed)


def _session(home: Path, checkout: Path, number: int) -> Path:
    """A finished Claude Code session of ``checkout``, in the project folder Claude Code names
    after the page's path of it."""
    made = claude_session(home, checkout, number)
    folder = home / ".claude" / "projects" / ("-home-dev-code-" + checkout.name)
    folder.mkdir(parents=True, exist_ok=True)
    moved = folder / made.name
    shutil.move(made, moved)
    if not any(made.parent.iterdir()):
        made.parent.rmdir()
    return moved


def test_learn_status_lists_each_session_with_its_reason(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code = home / "code"
    for name in ("shop-api", "scratch"):
        make_repo(code / name, f"git@github.com:acme/{name}.git")
    _session(home, code / "shop-api", 1)
    _session(home, code / "shop-api", 2)
    _session(home, code / "scratch", 3)
    fake = install_fake_claude(tmp_path / "fake", [success({"lessons": []}), logged_out()])
    path = os.pathsep.join((str(fake.folder), str(BIN), os.environ.get("PATH", "")))
    _scene(tmp_path, path).run(STATUS)
    assert len(fake.calls()) == 2
