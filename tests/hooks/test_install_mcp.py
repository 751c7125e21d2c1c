"""``hooks install --harness cursor|mcp``: the MCP server entry, merged into a client's config."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.errors import RecallError
from active_memory.hooks.install import CURSOR_WORKSPACE, install_mcp_server
from cli_runner import run_cli
from mcp_server.kit import mcp_session, serve_fixture, text_of
from recall.kit import lesson_id

STORE = Path("/home/dev/.local/state/active-memory/lessons.sqlite3")
CONFIG = "src/widgets/config.py"
OTHER_SERVER = {"command": "npx", "args": ["-y", "@acme/search-mcp"], "env": {"KEY": "value"}}


def entry_of(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())["mcpServers"]["active-memory"]  # type: ignore[no-any-return]


def test_a_cursor_project_install_writes_its_mcp_json(tmp_path: Path) -> None:
    project = tmp_path / "widgets"
    project.mkdir()
    done = install_mcp_server("cursor", workspace=project, store=STORE, project=project,
                              home=tmp_path / "home")  # fmt: skip
    assert (done.path, done.mode, done.changed, done.backup) == (
        project / ".cursor" / "mcp.json", "mcp", True, None)  # fmt: skip
    entry = entry_of(done.path)
    assert str(entry["command"]).endswith("active-memory")
    assert entry["args"] == ["mcp", "--repository", str(project), "--store", str(STORE)]
    written = done.path.read_bytes()
    again = install_mcp_server("cursor", workspace=project, store=STORE, project=project)
    assert (again.changed, again.backup) == (False, None)
    assert done.path.read_bytes() == written


def test_a_user_install_serves_the_folder_cursor_has_open(tmp_path: Path) -> None:
    done = install_mcp_server("cursor", workspace=None, store=STORE, home=tmp_path)
    assert done.path == tmp_path / ".cursor" / "mcp.json"
    assert entry_of(done.path)["args"] == [
        "mcp", "--repository", CURSOR_WORKSPACE, "--store", str(STORE)]  # fmt: skip


def test_merging_keeps_the_users_servers_settings_and_own_keys(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    original = {
        "mcpServers": {
            "search": OTHER_SERVER,
            "active-memory": {"command": "old", "args": [], "env": {"TRACE": "1"}},
            "browser": {"url": "http://127.0.0.1:9000/mcp"},
        },
        "theme": "dark",
    }
    config.write_text(json.dumps(original))
    done = install_mcp_server("cursor", workspace=tmp_path, store=STORE, project=tmp_path)
    document = json.loads(config.read_text())
    assert list(document["mcpServers"]) == ["search", "active-memory", "browser"]
    assert document["mcpServers"]["search"] == OTHER_SERVER
    assert document["mcpServers"]["browser"] == original["mcpServers"]["browser"]  # type: ignore[index]
    assert document["theme"] == "dark"
    ours = document["mcpServers"]["active-memory"]
    assert ours["env"] == {"TRACE": "1"}
    assert ours["args"][0] == "mcp"
    assert done.backup is not None
    assert json.loads(done.backup.read_text()) == original


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ('["a list"]', "must hold a JSON object"),
        ('{"mcpServers": ["x"]}', "mcpServers must be a JSON object"),
        ('{"mcpServers": {"active-memory": "x"}}', "mcpServers.active-memory must be a JSON"),
    ],
)
def test_a_malformed_config_is_refused_and_left_untouched(
    tmp_path: Path, content: str, problem: str
) -> None:
    config = tmp_path / ".mcp.json"
    config.write_text(content)
    with pytest.raises(RecallError, match=problem):
        install_mcp_server("mcp", workspace=tmp_path, store=STORE, project=tmp_path)
    assert config.read_text() == content
    assert [path.name for path in tmp_path.iterdir()] == [".mcp.json"]
    result = run_cli(["hooks", "install", "--harness", "mcp", "--project",
                                       str(tmp_path), "--store", str(STORE)])  # fmt: skip
    assert result.exit_code == 2
    assert problem in result.stderr
    assert config.read_text() == content


def test_the_generic_entry_is_printed_without_a_project(tmp_path: Path) -> None:
    store = tmp_path / "state" / "lessons.sqlite3"
    result = run_cli(["hooks", "install", "--harness", "mcp", "--repository",
                                       str(tmp_path), "--store", str(store)])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    entry = json.loads(result.stdout)["mcpServers"]["active-memory"]
    assert entry["args"] == ["mcp", "--repository", str(tmp_path.resolve()), "--store",
                             str(store)]  # fmt: skip
    assert list(tmp_path.iterdir()) == []  # printed, never written


def test_the_cli_writes_a_projects_mcp_json_and_reports_it(tmp_path: Path) -> None:
    args = ["hooks", "install", "--harness", "mcp", "--project", str(tmp_path), "--store",
            str(STORE)]  # fmt: skip
    first = run_cli(args)
    assert first.exit_code == 0, first.stderr
    assert first.stdout == f"installed: mcp MCP server 'active-memory' in {tmp_path}/.mcp.json\n"
    again = run_cli(args)
    assert again.stdout.startswith("already installed: mcp MCP server 'active-memory' in ")


async def test_the_written_entry_starts_a_server_for_the_project(tmp_path: Path) -> None:
    served = serve_fixture(tmp_path)
    done = install_mcp_server("cursor", workspace=served.workspace, store=served.store,
                              project=served.workspace)  # fmt: skip
    args = entry_of(done.path)["args"]
    assert isinstance(args, list)
    # The entry's own arguments, from a folder outside the project: --repository decides.
    async with mcp_session(served, cwd=tmp_path, raw_args=[str(arg) for arg in args]) as client:
        result = await client.call_tool(
            "recall", {"kind": "file", "value": "src/widgets/config.py"}
        )
    assert f"[{lesson_id(1)}@1] Config loads lazily" in text_of(result)


def test_a_config_linked_from_elsewhere_is_written_through_the_link(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "cursor-mcp.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps({"mcpServers": {"search": OTHER_SERVER}}))
    link = tmp_path / "home" / ".cursor" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    done = install_mcp_server("cursor", workspace=None, store=STORE, home=tmp_path / "home")
    assert link.is_symlink()
    assert link.resolve() == dotfiles
    assert done.path == dotfiles
    servers = json.loads(dotfiles.read_text())["mcpServers"]
    assert list(servers) == ["search", "active-memory"]
    assert done.backup is not None
    assert done.backup.parent == dotfiles.parent


def cli_install(project: Path) -> Result:
    return run_cli(["hooks", "install", "--harness", "cursor", "--project",
                                     str(project), "--store", str(STORE)])  # fmt: skip


def test_a_read_only_config_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    config = tmp_path / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text('{"mcpServers": {}}')
    config.chmod(0o444)
    result = cli_install(tmp_path)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {str(config)!r} is read-only; make it writable (chmod u+w) and install again, "
        "or add the entry `active-memory hooks install --harness mcp --repository DIR` prints "
        "yourself\n"
    )
    assert config.read_text() == '{"mcpServers": {}}'
    assert sorted(path.name for path in config.parent.iterdir()) == ["mcp.json"]
    config.chmod(0o644)
    assert cli_install(tmp_path).exit_code == 0
    config.chmod(0o444)  # already holding the entry: nothing to write, nothing refused
    assert cli_install(tmp_path).stdout.startswith("already installed: ")


def test_a_config_that_cannot_be_written_is_one_sentence_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)  # a folder the user may not write in
    result = cli_install(tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: {str(tmp_path / '.cursor' / 'mcp.json')!r} cannot be written (Permission "
        "denied); fix its folder's permissions and install again, or add the entry"
    )
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / ".cursor" / "mcp.json").exists()
