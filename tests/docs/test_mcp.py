"""docs/mcp.md: installing the server for Cursor and other clients, and the tools in Python,
on a widgets checkout and a store of lessons about it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.models.lessons import Evidence
from docs.compare import compare
from docs.pages import claim, output
from docs.scenes import INSTALL_ALIASES, Scene, widgets
from docs.transcript import BIN, environment, run_python, run_script, unalias
from recall.kit import lesson

PAGE = "docs/mcp.md"
INSTALL = claim(PAGE, "install")
CURSOR = claim(PAGE, "cursor")
PRINT = claim(PAGE, "print")
NOT_AN_OBJECT = claim(PAGE, "not-an-object")
READ_ONLY = claim(PAGE, "read-only")
IN_PYTHON = claim(PAGE, "in-python")
IN_PYTHON_OUTPUT = output(PAGE, "in-python")
SESSION = output(PAGE, "session")
# The calls of the page's session, in its order.
CALLS = (
    ("recall", {"kind": "file", "value": "src/widgets/config.py"}),
    ("recall", {"kind": "file", "value": "src/widgets/config.py"}),
    ("recall", {"kind": "command", "value": "grep -rn configure_bedrock src/widgets/storage"}),
    ("recall", {"kind": "file", "value": "/etc/hosts"}),
    ("explain", {"id": "lesson-00000000000000000000000001"}),
    ("list", {"limit": 3}),
    ("recall", {"kind": "directory", "value": "src"}),
)
FIRST = lesson(1, files=["src/widgets/config.py"], title="Config loads lazily",
               recommendation="Read settings through widgets.config.get(); importing the module "
               "must not read the environment.").model_copy(update={"evidence": Evidence(
                   run_id="run-7",
                   references=("exec:e3", "receipt:4", "repository:src/widgets/config.py"),
                   reason="the worker re-read config.py three times before finding the lazy "
                   "loader", source_commit="a" * 40)})  # fmt: skip
LESSONS = (
    FIRST,
    lesson(2, folders=["src/widgets/storage"], title="Storage writes are batched",
           recommendation="Call flush() before asserting on the blob store; writes wait for the "
           "batch to close."),
    lesson(3, identifiers=["configure_bedrock"], title="configure_bedrock needs a region",
           recommendation="Pass region= explicitly; the default comes from AWS_REGION, which CI "
           "leaves unset."),
    lesson(4, keyword_groups=[["bedrock", "region"]], title="Bedrock region comes from the env",
           recommendation="Set AWS_REGION in the test environment before making a client."),
)  # fmt: skip


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    """The page's checkout /tmp/demo/widgets, its store /tmp/demo/state/lessons.sqlite3 (the
    first lesson adapted once, in run-9), the commands run in the checkout."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    store = tmp_path / "state" / "lessons.sqlite3"
    checkout = widgets(tmp_path, store, LESSONS)
    from mcp_server.kit import adapt

    adapt(store, FIRST, run_id="run-9",
          recommendation="Read settings through widgets.config.get(); tests patch the "
          "environment after import.")  # fmt: skip
    return Scene(checkout, aliases={"/tmp/demo": str(tmp_path), **INSTALL_ALIASES})


def test_the_install_commands_write_each_client_s_entry(
    scene: Scene, isolated_state: dict[str, Path]
) -> None:
    printed = run_script(INSTALL, scene.folder, aliases=scene.aliases)
    entry = json.loads(printed[printed.index("{") :])  # the last command prints the entry
    assert entry["mcpServers"]["active-memory"]["args"][0] == "mcp"
    for written in (
        scene.folder / ".cursor" / "mcp.json",
        isolated_state["HOME"] / ".cursor" / "mcp.json",
        scene.folder / ".mcp.json",
    ):
        entry = json.loads(written.read_text("utf-8"))["mcpServers"]["active-memory"]
        assert entry["command"].endswith("/active-memory")


@pytest.mark.slow
def test_cursor_gets_one_entry_and_bad_files_are_refused(scene: Scene) -> None:
    """Slow: nine commands, one process each (about 4 s on two cores)."""
    scene.run(CURSOR)
    scene.run(PRINT)
    scene.run(NOT_AN_OBJECT)
    scene.run(READ_ONLY)


def test_the_tools_answer_in_process(scene: Scene) -> None:
    namespace = {"store_path": scene.folder.parent / "state" / "lessons.sqlite3",
                 "checkout": scene.folder}  # fmt: skip
    compare(IN_PYTHON_OUTPUT, IN_PYTHON_OUTPUT.body, run_python(IN_PYTHON, namespace))


async def _session(scene: Scene) -> str:
    """The page's session: the SDK's own client over stdio, each call and its text result."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.types import TextContent

    store = scene.folder.parent / "state" / "lessons.sqlite3"
    params = StdioServerParameters(
        command=str(BIN / "active-memory"),
        args=["mcp", "--store", str(store)],
        env=environment(),
        cwd=str(scene.folder),
    )
    errlog = scene.folder.parent / "mcp-stderr.log"
    printed: list[str] = []
    with errlog.open("w", encoding="utf-8") as stderr:
        async with Client(stdio_client(params, errlog=stderr), read_timeout_seconds=20) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            printed.append(f"$ tools/list -> {tools}")
            for name, arguments in CALLS:
                result = await client.call_tool(name, arguments)
                [text] = [block.text for block in result.content if isinstance(block, TextContent)]
                printed += ["", f"$ tools/call {name} {json.dumps(arguments)}",
                            f"isError: {result.is_error}", text]  # fmt: skip
                report = (result.structured_content or {}).get("report")
                if report:
                    cards = [[c["id"][-2:], c["score"], c["reason"], c["outcome"]]
                             for c in report["cards"]]  # fmt: skip
                    printed.append(f"structured report: {json.dumps(cards)}")
    return errlog.read_text("utf-8") + "\n".join(printed)


@pytest.mark.slow
async def test_a_session_with_the_sdk_client_prints_what_the_page_shows(scene: Scene) -> None:
    """Slow: starts the server as a process of its own and makes eight calls (about 3 s)."""
    printed = unalias(await _session(scene), scene.aliases)
    compare(SESSION, SESSION.body, printed)
