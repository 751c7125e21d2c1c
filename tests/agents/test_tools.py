"""Read-only investigation tools: confinement to their roots, bounded output, errors as results."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers.base import ToolCall
from active_memory.agents.tools import Toolbox, ToolOutcome
from active_memory.errors import ConfigError

FAKE_TOKEN = "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake0000"
REMOTE = f'[remote "origin"]\n\turl = https://user:{FAKE_TOKEN}@github.com/org/repo.git\n'


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    checkout = tmp_path / "checkout"
    evidence = tmp_path / "evidence"
    (checkout / "src" / "pkg").mkdir(parents=True)
    (checkout / ".git").mkdir()
    evidence.mkdir()
    (checkout / "README.md").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (checkout / "src" / "pkg" / "mod.py").write_text("import os\nBEDROCK_REGION = 'x'\n")
    (checkout / "src" / "blob.bin").write_bytes(b"BEDROCK\0\1\2")
    (checkout / ".git" / "config").write_text("BEDROCK in git metadata\n" + REMOTE)
    (evidence / "executions.json").write_text('{"exec": "e1"}\n')
    (tmp_path / "secret.txt").write_text("TOP-SECRET\n")
    return {"checkout": checkout, "evidence": evidence}


@pytest.fixture
def tools(tree: dict[str, Path]) -> Toolbox:
    return Toolbox(tree)


async def _run(tools: Toolbox, name: str, **arguments: Any) -> ToolOutcome:
    return await tools.run(ToolCall("c1", name, json.dumps(arguments)))


async def _read(tools: Toolbox, path: str, root: str = "checkout", **window: Any) -> ToolOutcome:
    return await _run(
        tools,
        "read_file",
        root=root,
        path=path,
        offset=window.get("offset"),
        limit=window.get("limit"),
    )


def test_tool_schemas_are_strict_for_both_apis(tools: Toolbox) -> None:
    for spec in tools.specs():
        schema = dict(spec.parameters)
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
        if spec.name != "read_transcript":  # it reads the evidence root's copies only
            assert schema["properties"]["root"]["enum"] == ["checkout", "evidence"]
    assert [spec.name for spec in tools.specs()] == [
        "read_file", "list_folder", "search_text", "read_transcript"
    ]  # fmt: skip


async def test_read_file_returns_a_window_and_says_where_to_continue(tools: Toolbox) -> None:
    outcome = await _read(tools, "README.md", offset=3, limit=2)
    assert not outcome.is_error
    assert outcome.content == (
        "checkout:README.md lines 3-4; more follows, continue with offset=5\nline 3\nline 4\n"
    )
    last = await _read(tools, "README.md", offset=10)
    assert last.content.startswith("checkout:README.md lines 10-10; end of file")


async def test_read_file_reaches_the_evidence_root(tools: Toolbox) -> None:
    outcome = await _read(tools, "executions.json", root="evidence")
    assert '"exec": "e1"' in outcome.content


@pytest.mark.parametrize(
    "path",
    ["../../etc/passwd", "../secret.txt", "src/../../secret.txt", "/etc/passwd"],
)
async def test_paths_that_leave_the_root_are_refused(tools: Toolbox, path: str) -> None:
    outcome = await _read(tools, path)
    assert outcome.is_error
    assert "is refused" in outcome.content
    assert "TOP-SECRET" not in outcome.content


async def test_a_symlink_pointing_outside_is_refused(tools: Toolbox, tree: dict[str, Path]) -> None:
    os.symlink(tree["checkout"].parent / "secret.txt", tree["checkout"] / "escape.txt")
    outcome = await _read(tools, "escape.txt")
    assert outcome.is_error
    assert outcome.content == "'escape.txt' is refused: it lies outside the checkout root"
    listing = await _run(tools, "list_folder", root="checkout", path="")
    assert "escape.txt -> (link)" in listing.content
    found = await _run(
        tools,
        "search_text",
        root="checkout",
        pattern="TOP-SECRET",
        path=None,
        regex=False,
        max_matches=None,
    )
    assert "(no matches)" in found.content


async def test_an_absolute_path_inside_the_root_is_accepted(
    tools: Toolbox, tree: dict[str, Path]
) -> None:
    outcome = await _read(tools, str(tree["checkout"] / "src" / "pkg" / "mod.py"))
    assert not outcome.is_error
    assert "BEDROCK_REGION" in outcome.content


async def test_list_folder_marks_folders_and_sizes(tools: Toolbox) -> None:
    outcome = await _run(tools, "list_folder", root="checkout", path="src")
    assert outcome.content == "checkout:src (2 entries)\nblob.bin (10 bytes)\npkg/"


async def test_listing_is_bounded(tree: dict[str, Path]) -> None:
    for n in range(5):
        (tree["evidence"] / f"page-{n}.json").write_text("{}")
    outcome = await _run(Toolbox(tree, max_entries=3), "list_folder", root="evidence", path="")
    assert outcome.content.endswith("[+3 more entries not shown]")


async def test_a_bounded_listing_shows_the_first_names_in_order_and_counts_all(
    tmp_path: Path,
) -> None:
    for name in ("d", "b", "e", "a", "c"):
        (tmp_path / name).write_text("")
    outcome = await _run(Toolbox({"checkout": tmp_path}, max_entries=2), "list_folder",
                         root="checkout", path="")  # fmt: skip
    lines = outcome.content.splitlines()
    assert lines[0] == "checkout: (5 entries)"
    assert lines[1:] == ["a (0 bytes)", "b (0 bytes)", "[+3 more entries not shown]"]


async def test_search_finds_text_skipping_binaries_and_git(tools: Toolbox) -> None:
    outcome = await _run(
        tools,
        "search_text",
        root="checkout",
        pattern="BEDROCK",
        path=None,
        regex=False,
        max_matches=None,
    )
    assert outcome.content == (
        "1 match(es) in 2 file(s)\ncheckout:src/pkg/mod.py line 2: BEDROCK_REGION = 'x'"
    )


async def test_search_regex_and_match_bound(tools: Toolbox) -> None:
    outcome = await _run(
        tools,
        "search_text",
        root="checkout",
        pattern=r"^line \d$",
        path="README.md",
        regex=True,
        max_matches=3,
    )
    lines = outcome.content.splitlines()
    assert lines[0] == "3 match(es) in 1 file(s); stopped at 3 matches"
    assert lines[1:] == [f"checkout:README.md line {n}: line {n}" for n in (1, 2, 3)]


async def test_a_bad_regex_is_an_error_result(tools: Toolbox) -> None:
    outcome = await _run(
        tools, "search_text", root="checkout", pattern="(", path=None, regex=True, max_matches=None
    )
    assert outcome.is_error
    assert "does not compile" in outcome.content


async def test_search_output_is_bounded_in_bytes(tree: dict[str, Path]) -> None:
    (tree["checkout"] / "many.txt").write_text(
        "".join(f"hit {n:03d} {'z' * 80}\n" for n in range(50))
    )
    tools = Toolbox(tree, max_output_bytes=1000)
    outcome = await _run(
        tools,
        "search_text",
        root="checkout",
        pattern="hit",
        path=None,
        regex=False,
        max_matches=None,
    )
    assert outcome.content.startswith("50 match(es) in 2 file(s); stopped at 50 matches\n")
    assert len(outcome.content.encode("utf-8")) < 1600
    assert outcome.content.endswith("[truncated at 1512 bytes; narrow the search]")


@pytest.mark.parametrize(
    "path", [".git/config", ".GIT/config", ".git", "src/.git/config", "remote.cfg"]
)
async def test_git_internals_are_refused_by_name_and_through_links(
    tools: Toolbox, tree: dict[str, Path], path: str
) -> None:
    (tree["checkout"] / "remote.cfg").symlink_to(tree["checkout"] / ".git" / "config")
    outcome = await _read(tools, path)
    assert outcome.is_error
    assert outcome.content == f"{path!r} is refused: git internals (.git) are not evidence"


async def test_git_internals_are_not_listed_and_cannot_be_listed(tools: Toolbox) -> None:
    root = await _run(tools, "list_folder", root="checkout", path="")
    inside = await _run(tools, "list_folder", root="checkout", path=".git")
    assert root.content == "checkout: (2 entries)\nREADME.md (71 bytes)\nsrc/"
    assert inside.is_error


async def test_every_output_and_error_is_redacted(tools: Toolbox, tree: dict[str, Path]) -> None:
    (tree["checkout"] / "deploy.cfg").write_text(REMOTE)
    (tree["evidence"] / f"{FAKE_TOKEN}.log").write_text("leaked name\n")

    read = await _read(tools, "deploy.cfg")
    listed = await _run(tools, "list_folder", root="evidence", path="")
    found = await _run(
        tools,
        "search_text",
        root="checkout",
        pattern="url",
        path=None,
        regex=False,
        max_matches=None,
    )
    error = await _read(tools, f"{FAKE_TOKEN}.cfg")

    assert "\turl = https://[redacted:url-credentials]@github.com/org/repo.git" in read.content
    assert "[redacted:github-token].log (12 bytes)" in listed.content
    assert "[redacted:url-credentials]@github.com" in found.content
    assert error.is_error
    assert error.content == "'[redacted:github-token].cfg' is not a file in checkout"
    for outcome in (read, listed, found, error):
        assert "FAKEfake" not in outcome.content


async def test_calls_the_model_gets_wrong_come_back_as_errors(tools: Toolbox) -> None:
    unknown = await tools.run(ToolCall("c", "write_file", "{}"))
    assert unknown.is_error
    assert "unknown tool 'write_file'" in unknown.content
    malformed = await tools.run(ToolCall("c", "read_file", "{not json"))
    assert malformed.is_error
    assert "not valid JSON" in malformed.content
    missing = await tools.run(ToolCall("c", "read_file", '{"root": "checkout"}'))
    assert missing.is_error
    assert "invalid arguments" in missing.content
    wrong_root = await _read(tools, "x", root="home")
    assert wrong_root.is_error
    folder = await _read(tools, "src")
    assert folder.is_error
    assert "is not a file" in folder.content
    binary = await _read(tools, "src/blob.bin")
    assert binary.is_error
    assert "binary" in binary.content


def test_roots_must_exist_and_be_named_plainly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a folder"):
        Toolbox({"checkout": tmp_path / "missing"})
    with pytest.raises(ConfigError, match="must match"):
        Toolbox({"Check Out": tmp_path})


async def test_the_tools_remember_which_files_they_showed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("ALPHA = 1\n")
    (tmp_path / "src" / "b.py").write_text("BETA = 2\n")
    (tmp_path / "c.md").write_text("nothing here\n")
    box = Toolbox({"repository": tmp_path})
    assert box.seen("repository") == frozenset()
    assert box.seen("checkout") is None

    shown = await _read(box, "src/a.py", root="repository")
    found = await _run(box, "search_text", root="repository", pattern="BETA", path=None,
                       regex=False, max_matches=None)  # fmt: skip

    assert shown.content.startswith("repository:src/a.py lines 1-1")
    assert "repository:src/b.py line 1: BETA = 2" in found.content
    assert box.seen("repository") == {"src/a.py", "src/b.py"}
