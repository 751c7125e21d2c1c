"""A real git checkout, a throwaway store, and the SDK's own client over stdio.

Every session spawns ``python -m active_memory.cli.main mcp`` as a real subprocess (the package
on ``PYTHONPATH``, the store given with ``--store``) and talks to it with ``mcp.Client``; the
whole session runs under :data:`SESSION_TIMEOUT_S` and each request under
:data:`CALL_TIMEOUT_S`, so a server that stops answering fails the test instead of hanging it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import git
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Evidence, GraphScope, Lesson
from active_memory.store.backend import PublicationControl
from active_memory.store.sqlite import SqliteStore
from recall.kit import REPOSITORY, lesson, lesson_id, widgets_checkout, widgets_lessons

__all__ = [
    "CALL_TIMEOUT_S",
    "EVIDENCE",
    "GRAPH",
    "OTHER_REPOSITORY",
    "SESSION_TIMEOUT_S",
    "SRC",
    "Served",
    "adapt",
    "mcp_session",
    "seed",
    "serve_fixture",
    "served_lessons",
    "text_of",
]

SRC = Path(__file__).resolve().parents[2] / "src"
SESSION_TIMEOUT_S = 60
CALL_TIMEOUT_S = 20
OTHER_REPOSITORY = "forge:github.com/acme/other"
GRAPH = "b" * 64
FOREIGN_GRAPH = "c" * 64
EVIDENCE = Evidence(
    run_id="run-7",
    references=("exec:e3", "receipt:4", "repository:src/widgets/config.py"),
    reason="the worker re-read config.py three times before finding the lazy loader",
    source_commit="a" * 40,
)


class Served:
    """The served checkout, a second checkout of another repository, and the store."""

    def __init__(self, workspace: Path, other: Path, store: Path, errlog: Path) -> None:
        self.workspace = workspace
        self.other = other
        self.store = store
        self.errlog = errlog


def _graph_lesson(number: int, node: str, graph_hash: str, repository: str | None) -> Lesson:
    return Lesson(
        id=lesson_id(number),
        revision=1,
        scope=GraphScope(graph_hash=graph_hash, node_id=node, repository=repository),
        title=f"Node card {number}",
        recommendation=f"Node recommendation {number}.",
        evidence=EVIDENCE,
    )


def served_lessons() -> tuple[Lesson, ...]:
    """The widgets lessons (lesson 1 with full evidence), another repository's lessons on the
    same paths, and graph lessons: unqualified, qualified by each repository, of another
    graph."""
    first, *rest = widgets_lessons()
    return (
        first.model_copy(update={"evidence": EVIDENCE}),
        *rest,
        lesson(
            11,
            files=["src/widgets/config.py"],
            title="Other config card",
            repository=OTHER_REPOSITORY,
        ),
        lesson(
            12,
            identifiers=["configure_bedrock"],
            title="Other bedrock card",
            repository=OTHER_REPOSITORY,
        ),
        _graph_lesson(21, "worker", GRAPH, None),
        _graph_lesson(22, "verifier", GRAPH, REPOSITORY),
        _graph_lesson(23, "worker", GRAPH, OTHER_REPOSITORY),
        _graph_lesson(24, "worker", FOREIGN_GRAPH, None),
    )


def seed(store: Path, lessons: Sequence[Lesson], control: PublicationControl | None = None) -> None:
    with SqliteStore(store) as opened:
        mutations = tuple(
            Mutation(op="upsert", id=item.id, expected_revision=0, draft=item.draft)
            for item in lessons
        )
        opened.publish(Publication(run_id="seed", mutations=mutations), control)


def adapt(store: Path, item: Lesson, *, run_id: str, **changes: Any) -> None:
    """Publish a new revision of ``item`` with ``changes`` to its card."""
    draft = item.draft.model_copy(update=changes)
    with SqliteStore(store) as opened:
        current = opened.get(item.id)
        opened.publish(Publication(run_id=run_id, mutations=(
            Mutation(op="upsert", id=item.id, expected_revision=current.revision, draft=draft),
        )))  # fmt: skip


def serve_fixture(tmp_path: Path) -> Served:
    workspace = widgets_checkout(tmp_path / "widgets")
    (workspace / "src" / "widgets").mkdir(parents=True)
    (workspace / "src" / "widgets" / "config.py").write_text("LAZY = True\n")
    other = tmp_path / "other"
    other.mkdir()
    git.Repo.init(other).create_remote("origin", "https://github.com/acme/other.git")
    (other / "src" / "widgets").mkdir(parents=True)
    store = tmp_path / "state" / "lessons.sqlite3"
    seed(store, served_lessons())
    return Served(workspace, other, store, tmp_path / "server-stderr.log")


@asynccontextmanager
async def mcp_session(
    served: Served,
    *,
    cwd: Path | None = None,
    args: Sequence[str] = (),
    raw_args: Sequence[str] | None = None,
) -> AsyncIterator[Client]:
    """A client connected to a fresh ``active-memory mcp`` process (one MCP session): with
    ``--store`` and ``args``, or with exactly ``raw_args`` (an installed entry's)."""
    command = ["mcp", "--store", str(served.store), *args] if raw_args is None else raw_args
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "active_memory.cli.main", *command],
        env={"PYTHONPATH": str(SRC)},
        cwd=str(cwd or served.workspace),
    )
    with served.errlog.open("a", encoding="utf-8") as errlog, anyio.fail_after(SESSION_TIMEOUT_S):
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client


def text_of(result: CallToolResult) -> str:
    """The one text block a tool result carries."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text
