"""docs/mcp.md: installing the server for Cursor and other clients, and the tools in Python,
on a widgets checkout and a store of lessons about it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs.compare import compare
from docs.pages import claim, output
from docs.scenes import INSTALL_ALIASES, Scene, widgets
from docs.transcript import run_python, run_script
from recall.kit import lesson

PAGE = "docs/mcp.md"
INSTALL = claim(PAGE, "install")
CURSOR = claim(PAGE, "cursor")
PRINT = claim(PAGE, "print")
NOT_AN_OBJECT = claim(PAGE, "not-an-object")
READ_ONLY = claim(PAGE, "read-only")
IN_PYTHON = claim(PAGE, "in-python")
IN_PYTHON_OUTPUT = output(PAGE, "in-python")
FIRST = lesson(1, files=["src/widgets/config.py"], title="Config loads lazily",
               recommendation="Read settings through widgets.config.get(); importing the module "
               "must not read the environment.")  # fmt: skip
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
