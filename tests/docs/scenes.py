"""Folders the pages' examples run in, made by the tests rather than pasted: a `widgets`
checkout beside a store of lessons about it."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git

import active_memory
from active_memory.models.lessons import Lesson
from docs.pages import Block
from docs.transcript import BIN, run_servers, run_transcript
from recall.kit import REPOSITORY, seed_store

__all__ = ["INSTALL_ALIASES", "REPOSITORY", "Scene", "widgets"]

# The pages show the interpreter and package of a plain virtualenv at /home/dev/.venv. The
# interpreter is named apart: a virtualenv made with `python3 -m venv` runs as bin/python3.
INSTALL_ALIASES = {
    "/home/dev/.venv/bin/python": sys.executable,
    "/home/dev/.venv/bin": str(BIN),
    "/home/dev/.venv/lib/python3.11/site-packages/active_memory": str(
        Path(active_memory.__file__).resolve().parent
    ),
}


@dataclass(frozen=True)
class Scene:
    """Where a page's transcripts run: the folder, the environment, the page's paths."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def run(self, block: Block, *, aliases: dict[str, str] | None = None, **options: Any) -> str:
        """Run a transcript here (what it printed); ``aliases`` adds to the scene's own."""
        aliases = {**self.aliases, **(aliases or {})}
        return run_transcript(block, self.folder, env=self.env, aliases=aliases, **options)

    def serve(self, block: Block) -> None:
        run_servers(block, self.folder, env=self.env, aliases=self.aliases)


def widgets(root: Path, store: Path, lessons: Sequence[Lesson]) -> Path:
    """``root/widgets``: a fresh clone of github.com/acme/widgets (its files not committed),
    and ``store`` holding ``lessons`` (revision 1, published by run ``seed``)."""
    checkout = root / "widgets"
    for path, text in {
        "src/widgets/config.py": "def load_config():\n    ...\n",
        "src/widgets/storage/blob.py": "class BlobWriter:\n    def flush(self): ...\n",
        "docs/index.md": "# Widgets\n",
    }.items():
        (checkout / path).parent.mkdir(parents=True, exist_ok=True)
        (checkout / path).write_text(text, "utf-8")
    git.Repo.init(checkout).create_remote("origin", "https://github.com/acme/widgets.git")
    store.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    seed_store(store, lessons)
    return checkout
