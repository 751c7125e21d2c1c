"""Without the ``[mcp]`` extra, ``mcp`` and ``hooks install`` for an MCP client are one
sentence naming the install command and exit 2; nothing is written.

The extra is installed in the test environment, so a fresh interpreter hides it: a
``sys.meta_path`` finder raises for the blocked names what the import system raises for a
module that is not installed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

INSTALL = "install it with: pip install 'active-memory[mcp]'"
_RUN_WITHOUT = """\
import sys

BLOCKED = {blocked!r}


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
sys.argv = ["active-memory", *{argv!r}]
from active_memory.cli.main import main

main()
"""


def _without(blocked: tuple[str, ...], *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = _RUN_WITHOUT.format(blocked=blocked, argv=list(argv))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)  # fmt: skip


@pytest.mark.parametrize(("blocked", "named"), [(("mcp", "anyio"), "anyio"), (("mcp",), "mcp")])
def test_mcp_without_the_extra_is_one_sentence_naming_the_install_and_exit_2(
    tmp_path: Path, blocked: tuple[str, ...], named: str
) -> None:
    done = _without(blocked, "mcp", "--store", str(tmp_path / "s.sqlite3"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: the MCP server needs the MCP SDK ({named!r} is not installed); {INSTALL}\n"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["hooks", "install", "--harness", "cursor", "--project", "."],
        ["hooks", "install", "--harness", "cursor"],
        ["hooks", "install", "--harness", "mcp", "--project", "."],
        ["hooks", "install", "--harness", "mcp"],
    ],
    ids=["cursor-project", "cursor-user", "mcp-project", "mcp-print"],
)
def test_installing_an_mcp_entry_without_the_extra_is_refused_and_writes_nothing(
    tmp_path: Path, argv: list[str]
) -> None:
    home = Path.home()  # the test's own home (conftest): a user-level config would land here
    before = sorted(home.rglob("*")), sorted(tmp_path.rglob("*"))
    done = _without(("mcp", "anyio"), *argv, "--store", str(tmp_path / "s.sqlite3"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    harness = argv[3]
    assert done.stderr == (
        "error: the MCP server needs the MCP SDK ('anyio' is not installed), so the "
        f"{harness} entry could not start it; {INSTALL}, then install the entry again\n"
    )
    assert done.stdout == ""
    assert (sorted(home.rglob("*")), sorted(tmp_path.rglob("*"))) == before
