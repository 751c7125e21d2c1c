"""A real git checkout, a throwaway store, and the SDK's own client over stdio.

Every session spawns ``python -m active_memory.cli.main mcp`` as a real subprocess (the package
on ``PYTHONPATH``, the store given with ``--store``) and talks to it with ``mcp.Client``; the
whole session runs under :data:`SESSION_TIMEOUT_S` and each request under
:data:`CALL_TIMEOUT_S`, so a server that stops answering fails the test instead of hanging it.
:func:`hold_session` keeps one session open across tests that do not need a fresh server;
:func:`local_session` serves the same tools in the test's own process, for a test about what a
tool answers from a store changed before or while serving rather than about the process.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import git
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from active_memory.mcp_server.reads import StoreReads
from active_memory.mcp_server.server import McpTools, build_server
from active_memory.mcp_server.workspace import Workspace
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
    "hold_session",
    "local_session",
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
    timeout_s: float = SESSION_TIMEOUT_S,
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
    with served.errlog.open("a", encoding="utf-8") as errlog, anyio.fail_after(timeout_s):
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client


@asynccontextmanager
async def local_session(served: Served, *, runs: Sequence[Path] = ()) -> AsyncIterator[Client]:
    """A client of the tools ``mcp --store`` (with ``--runs`` for each of ``runs``) serves on
    ``served`` from its checkout, run in this process through the SDK's in-memory transport,
    under the same time bounds. A server process costs ~0.9 CPU-s, nearly all of it importing
    the SDK; the fresh and the shared ones above are the tests of the process and of the wire."""
    tools = McpTools(StoreReads(served.store, Workspace.at(served.workspace), runs=runs))
    with anyio.fail_after(SESSION_TIMEOUT_S):
        async with Client(build_server(tools), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client


async def hold_session(
    served: Served, *, timeout_s: float, args: Sequence[str] = ()
) -> tuple[Client, Callable[[], Awaitable[None]]]:
    """A client of a fresh server (``mcp_session``'s ``args``), and the coroutine function that
    ends its session.

    The session runs in a task of its own: the SDK's client holds anyio cancel scopes, which
    must be left by the task that entered them, while a module-scoped fixture sets up and tears
    down in two different tasks. Requests may come from any task on the same event loop."""
    opened: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
    release = asyncio.Event()

    async def run() -> None:
        try:
            async with mcp_session(served, args=args, timeout_s=timeout_s) as client:
                opened.set_result(client)
                await release.wait()
        except Exception as error:
            if opened.done():  # failed while held or closing: close() re-raises it
                raise
            opened.set_exception(error)  # failed to start: hold_session raises it

    task = asyncio.create_task(run())
    client = await opened

    async def close() -> None:
        release.set()
        await task

    return client, close


def text_of(result: CallToolResult) -> str:
    """The one text block a tool result carries."""
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text
