from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.recall.signals import (
    MAX_PATHS,
    MAX_SHELL_TOKENS,
    ToolCall,
    WorkspaceRoot,
    extract_signals,
    split_words,
)
from recall.kit import ROOT, WORKSPACE


def paths(tool: str, cwd: str | None = WORKSPACE, **arguments: object) -> tuple[str, ...]:
    return extract_signals(ToolCall(tool, arguments, cwd), ROOT).paths


def shell(command: str, cwd: str | None = WORKSPACE) -> tuple[str, ...]:
    return paths("Bash", cwd, command=command)


def test_absolute_native_path_becomes_root_relative() -> None:
    assert paths("Read", file_path=f"{WORKSPACE}/src/app.py") == ("src/app.py",)


@pytest.mark.parametrize("field", ["file_path", "filePath", "path", "filename"])
def test_every_native_path_field_is_read(field: str) -> None:
    assert paths("Tool", **{field: "src/app.py"}) == ("src/app.py",)


def test_paths_list_field_is_read_in_order() -> None:
    assert paths("MultiRead", paths=["b.py", "a.py"]) == ("b.py", "a.py")


def test_relative_path_resolves_against_the_tool_cwd() -> None:
    assert paths("Read", cwd=f"{WORKSPACE}/src", file_path="app.py") == ("src/app.py",)


def test_relative_path_falls_back_to_the_root_when_the_cwd_is_outside() -> None:
    assert paths("Read", cwd="/tmp/elsewhere", file_path="src/app.py") == ("src/app.py",)


def test_tool_workdir_moves_the_base_and_is_a_path_itself() -> None:
    found = paths("shell", command="cat app.py", workdir=f"{WORKSPACE}/src")
    assert found == ("src", "src/app.py")


def test_dot_dot_and_backslashes_normalise_without_the_filesystem() -> None:
    assert paths("Read", file_path=f"{WORKSPACE}/src/./lib/../app.py") == ("src/app.py",)
    assert paths("Read", file_path="src\\pkg\\mod.py") == ("src/pkg/mod.py",)


def test_paths_outside_the_workspace_are_ignored() -> None:
    assert paths("Read", file_path="/etc/passwd") == ()
    assert paths("Read", file_path=f"{WORKSPACE}/../other/x.py") == ()
    assert paths("Read", file_path="../../../../etc/passwd") == ()
    assert paths("Read", file_path=f"{WORKSPACE}-old/src/app.py") == ()


def test_the_root_itself_is_not_a_path_signal() -> None:
    assert paths("Glob", path=WORKSPACE, pattern="*.md") == ()


def test_home_relative_paths_are_ignored() -> None:
    assert paths("Read", file_path="~/notes.txt") == ()


def test_symlinks_are_not_followed_when_matching(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    root = WorkspaceRoot.at(link)
    # Both spellings of the root are known, computed once when the root is made.
    assert root.roots == (str(link), str(real))
    outside = tmp_path / "outside"
    outside.mkdir()
    (real / "src" / "escape").symlink_to(outside)
    call = ToolCall("Read", {"file_path": str(link / "src" / "escape" / "x.py")}, str(link))
    # A symlink inside the workspace is kept as written: lexical, never resolved.
    assert extract_signals(call, root).paths == ("src/escape/x.py",)
    call = ToolCall("Read", {"file_path": str(real / "src" / "app.py")}, str(link))
    assert extract_signals(call, root).paths == ("src/app.py",)


def test_windows_paths_normalise_with_their_drive() -> None:
    root = WorkspaceRoot(("c:/work/repo",))
    call = ToolCall("Read", {"file_path": "C:\\work\\repo\\src\\app.py"}, "C:\\work\\repo")
    assert extract_signals(call, root).paths == ("src/app.py",)


def test_cd_chain_moves_the_base_for_later_commands() -> None:
    assert shell("cd src && cat app.py; ls ../docs") == ("src", "src/app.py", "docs")


def test_cd_inside_a_subshell_does_not_leak() -> None:
    assert shell("(cd src && cat app.py) && cat app.py") == ("src", "src/app.py", "app.py")


def test_cd_to_home_makes_the_base_unknown_and_falls_back_to_the_root() -> None:
    assert shell("cd ~ && cat src/app.py") == ("src/app.py",)


def test_newlines_or_and_pipes_separate_commands() -> None:
    found = shell("cd src\ncat a.py || cat b.py | grep x > out.txt")
    assert found == ("src", "src/a.py", "src/b.py", "src/out.txt")


def test_quoted_arguments_keep_spaces() -> None:
    assert shell("cat 'docs/read me.md' \"src/my file.py\"") == (
        "docs/read me.md",
        "src/my file.py",
    )


def test_options_are_skipped_but_option_values_after_equals_are_paths() -> None:
    assert shell("pytest -q --rootdir=tests --maxfail 1") == ("tests",)


def test_a_command_given_by_path_is_a_path() -> None:
    assert shell("./scripts/build.sh --fast") == ("scripts/build.sh",)


def test_glob_arguments_contribute_their_literal_directory() -> None:
    assert shell("ls src/app/*.py") == ("src/app",)


def test_bash_dash_c_scripts_are_parsed() -> None:
    assert paths("shell", command=["bash", "-lc", "cd src && cat app.py"]) == ("src", "src/app.py")


def test_comments_are_not_paths() -> None:
    assert shell("cat a.py # then read b.py\ncat c.py") == ("a.py", "c.py")


def test_unclosed_quote_keeps_what_came_before() -> None:
    assert shell("cat a.py && cat 'b.py") == ("a.py",)


def test_codex_patch_headers_name_files() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** Update File: src/old.py\n"
        "*** Move to: src/moved.py\n@@\n-a\n+b\n*** Delete File: src/gone.py\n*** End Patch\n"
    )
    found = paths("apply_patch", cwd=f"{WORKSPACE}/pkg", command=patch)
    assert found == ("pkg/src/new.py", "pkg/src/old.py", "pkg/src/moved.py", "pkg/src/gone.py")


def test_patch_in_a_heredoc_is_read_too() -> None:
    command = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.py\n*** End Patch\nEOF"
    assert "src/a.py" in shell(command)


def test_glob_pattern_gives_words_and_its_literal_directory() -> None:
    signals = extract_signals(ToolCall("Glob", {"pattern": "src/recall/**/*.py"}, WORKSPACE), ROOT)
    assert signals.paths == ("src/recall",)
    assert "recall" in signals.words


def test_grep_pattern_gives_identifiers_and_path_a_path() -> None:
    call = ToolCall("Grep", {"pattern": "def configure_bedrock\\(", "path": "src"}, WORKSPACE)
    signals = extract_signals(call, ROOT)
    assert signals.paths == ("src",)
    assert "configure_bedrock" in signals.identifiers
    assert {"configure", "bedrock"} <= signals.words


def test_identifiers_are_kept_whole_and_split_into_words() -> None:
    call = ToolCall("Bash", {"command": "echo $CLAUDE_CODE_USE_BEDROCK parseHTTPResponse2"}, None)
    signals = extract_signals(call, ROOT)
    assert {"CLAUDE_CODE_USE_BEDROCK", "parseHTTPResponse2"} <= signals.identifiers
    assert {"claude", "bedrock", "parse", "http", "response2"} <= signals.words


@pytest.mark.parametrize(
    ("identifier", "words"),
    [
        ("configure_bedrock", ["configure", "bedrock"]),
        ("HTTPServer", ["http", "server"]),
        ("getUserID", ["get", "user", "id"]),
        ("sha256sum", ["sha256", "sum"]),
        ("utf8Decode", ["utf8", "decode"]),
        ("__init__", ["init"]),
    ],
)
def test_split_words(identifier: str, words: list[str]) -> None:
    assert list(split_words(identifier)) == words


def test_broad_and_short_words_are_not_topic_words() -> None:
    call = ToolCall("Bash", {"command": "read the_file and write_code x"}, None)
    signals = extract_signals(call, ROOT)
    assert not signals.words & {"read", "the", "file", "and", "write", "code", "x"}


def test_short_runs_are_not_identifiers() -> None:
    signals = extract_signals(ToolCall("Bash", {"command": "ab cd efg"}, None), ROOT)
    assert signals.identifiers == {"efg"}


def test_the_workspace_location_is_not_a_topic() -> None:
    call = ToolCall("Bash", {"command": f"cat {WORKSPACE}/src/app.py"}, WORKSPACE)
    assert not extract_signals(call, ROOT).identifiers & {"home", "dev", "widgets"}


def test_huge_inputs_are_bounded() -> None:
    many = " ".join(f"f{i}.py" for i in range(MAX_SHELL_TOKENS * 3))
    signals = extract_signals(ToolCall("Bash", {"command": many}, WORKSPACE), ROOT)
    assert len(signals.paths) == MAX_PATHS
    blob = "x_" * 2_000_000
    signals = extract_signals(ToolCall("Write", {"file_path": "a.py", "content": blob}, None), ROOT)
    assert signals.paths == ("a.py",)


def test_the_first_distinct_runs_up_to_the_bound_are_the_identifiers() -> None:
    from active_memory.recall.signals import MAX_IDENTIFIERS

    text = "dup dup " + " ".join(f"run{number}" for number in range(MAX_IDENTIFIERS + 10))
    found = extract_signals(ToolCall("Tool", {"text": text}), ROOT).identifiers
    assert found == {"dup"} | {f"run{number}" for number in range(MAX_IDENTIFIERS - 1)}
    repeated = " ".join(["same"] * (MAX_IDENTIFIERS + 10) + ["last"])
    assert extract_signals(ToolCall("Tool", {"text": repeated}), ROOT).identifiers == {
        "same", "last"}  # fmt: skip


def test_odd_argument_types_never_raise() -> None:
    call = ToolCall(
        "Weird", {"path": 3, "paths": [None, 4], "command": {"x": 1}, "deep": [[[["a"]]]]}
    )
    assert extract_signals(call, ROOT).paths == ()


def test_root_spellings_come_from_the_real_path(tmp_path: Path) -> None:
    root = WorkspaceRoot.at(tmp_path)
    assert root.primary == os.path.abspath(tmp_path)


def test_search_patterns_are_not_paths() -> None:
    assert shell("grep -rn configure_bedrock src") == ("src",)
    assert shell("rg -n 'BEDROCK_REGION' src/a docs") == ("src/a", "docs")
    assert shell("grep -e pattern src/a.py") == ("src/a.py",)
    assert shell("grep -f patterns.txt src/a.py") == ("patterns.txt", "src/a.py")
    assert shell("sed -n 1,20p src/app.py") == ("src/app.py",)
    assert shell("sed -i 's/old/new/g' src/app.py") == ("src/app.py",)
    assert shell("sed -e 's/a/b/' -e '/x/d' src/app.py") == ("src/app.py",)
    assert shell("awk -F: '{print $1}' docs/users.txt") == ("docs/users.txt",)
    assert shell("jq .version package.json") == ("package.json",)


# --- shell noise (each of these once produced a wrong path or missed the right one) ------


def test_a_cd_outside_the_workspace_takes_later_relative_paths_with_it() -> None:
    assert shell("cd ../other && cat src/app.py") == ()
    assert shell("cd /tmp && cat src/app.py; ls docs") == ()
    assert shell(f"cd /tmp && cat {WORKSPACE}/src/app.py") == ("src/app.py",)
    assert shell("(cd ../other && cat src/a.py) && cat src/b.py") == ("src/b.py",)
    assert paths("shell", command="cat src/app.py", workdir="/srv/elsewhere") == ()


def test_test_node_ids_and_source_positions_name_their_file() -> None:
    assert shell("pytest tests/test_x.py::test_foo") == ("tests/test_x.py",)
    assert shell("pytest 'tests/test_x.py::TestA::test_b[param-1]'") == ("tests/test_x.py",)
    assert shell("vim src/app.py:12") == ("src/app.py",)
    assert shell("code -g src/app.py:12:5") == ("src/app.py",)


def test_redirections_numbers_and_urls_are_not_paths() -> None:
    assert shell("make test 2>&1 | tee build.log") == ("test", "build.log")
    assert shell("pytest > out.txt 2> err.txt < in.txt") == ("out.txt", "err.txt", "in.txt")
    assert shell("cmd &> all.log; cmd >& both.log") == ("all.log", "both.log")
    written = "cat <<'EOF' > out.txt\nimport src/x.py\n./run.sh\nEOF\ncat src/y.py"
    assert shell(written) == ("out.txt", "src/y.py")
    assert shell("cat <<-END\n\tsrc/x.py\n\tEND\ncat <<A <<B\nx/a\nA\nx/b\nB\nls docs") == ("docs",)
    assert shell("grep x <<< 'src/a.py'") == ()
    assert shell("head -n 20 src/app.py") == ("src/app.py",)
    assert shell("curl -s https://example.invalid/src/app.py") == ()
    assert shell("cat $HOME/notes.txt src/$NAME.py") == ("src",)
    assert shell("diff <(sort a.txt) <(sort b.txt)") == ("a.txt", "b.txt")


@pytest.mark.parametrize(
    "command",
    [
        "sudo cat src/app.py",
        "sudo -u root -E cat src/app.py",
        "env FOO=1 cat src/app.py",
        "env -i PATH=/bin cat src/app.py",
        "time cat src/app.py",
        "nice -n 10 cat src/app.py",
        "nohup cat src/app.py",
        "timeout 10 cat src/app.py",
        "timeout -s KILL 5s cat src/app.py",
        "find . -name '*.py' | xargs -n 1 cat src/app.py",
        "sudo -u root env -u HOME time nice cat src/app.py",
    ],
)
def test_wrappers_are_looked_through_to_the_command_they_run(command: str) -> None:
    assert shell(command)[-1:] == ("src/app.py",)
    assert not {"cat", "root", "10", "5s", "KILL", "1", "HOME", "FOO=1"} & set(shell(command))


def test_xargs_runs_a_search_whose_first_operand_is_a_pattern() -> None:
    assert shell("git ls-files | xargs grep -l configure_bedrock src") == ("src",)


def test_directory_options_move_the_command_base() -> None:
    assert shell("git -C src log app.py") == ("src", "src/app.py")
    assert shell("git -C src -C pkg diff -- mod.py") == ("src", "src/pkg", "src/pkg/mod.py")
    assert shell("git log -C app.py") == ("app.py",)  # after the subcommand: copy detection
    assert shell("make -C docs html") == ("docs", "docs/html")
    assert shell("npm --prefix web test") == ("web", "web/test")
    assert shell("yarn --cwd=web build") == ("web", "web/build")
    assert shell("env -C src cat app.py") == ("src", "src/app.py")
    assert shell("sudo -D src cat app.py") == ("src", "src/app.py")
    # The move is the command's own: the next command is back at the shell's base.
    assert shell("git -C src status && cat app.py") == ("src", "app.py")


def test_git_subcommands_and_messages_are_not_paths() -> None:
    assert shell("git commit -m 'fix the loader' src/app.py") == ("src/app.py",)
    assert shell("git -c core.pager=cat checkout -b feature/x") == ()
    assert shell("git log --grep=bedrock --since=2.weeks -- src") == ("src",)


_SHELLISH = st.text(alphabet=st.sampled_from(list("ab/.:-=$&|;<>()'\"\\#\n 12~*{}")), max_size=200)


@settings(max_examples=300, deadline=None)
@given(_SHELLISH)
def test_any_shell_text_gives_bounded_workspace_paths_without_raising(script: str) -> None:
    found = shell(script)
    assert len(found) <= MAX_PATHS
    assert all(path and not path.startswith(("/", "../")) and ".." not in path.split("/")
               for path in found)  # fmt: skip


# The patterns signals.py once compiled, now matched without re (it stays off the hook path).
IDENTIFIER_RUN = re.compile(r"[A-Za-z0-9_]+")
CAMEL_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
ALNUM_AND_MORE = st.text(st.sampled_from("AaBbZz019_-é É.\u00e9"), max_size=40)


@settings(max_examples=500, deadline=None)
@given(ALNUM_AND_MORE)
def test_words_are_split_exactly_as_the_camel_case_pattern_splits_them(text: str) -> None:
    expected = [word.lower() for chunk in text.split("_") for word in CAMEL_WORD.findall(chunk)]
    assert list(split_words(text)) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | ALNUM_AND_MORE)
def test_identifiers_are_the_runs_the_identifier_pattern_finds(text: str) -> None:
    found = extract_signals(ToolCall("Tool", {"text": text}), ROOT).identifiers
    runs = {run for run in IDENTIFIER_RUN.findall(text) if 3 <= len(run) <= 128}
    assert found == runs


@pytest.mark.parametrize(
    ("path", "expected"),
    [("c:/work/repo/a.py", ("a.py",)), ("C:", ()), ("c:x", ("c:x",)),
     ("1:/work/repo/a.py", ("1:/work/repo/a.py",)), ("é:/work/repo/a.py", ("é:/work/repo/a.py",))],
)  # fmt: skip
def test_a_drive_is_one_ascii_letter_and_a_colon(path: str, expected: tuple[str, ...]) -> None:
    # Not a drive, a path is relative: it resolves from the root, where it stays.
    root = WorkspaceRoot(("c:/work/repo",))
    assert extract_signals(ToolCall("Read", {"file_path": path}), root).paths == expected


@pytest.mark.parametrize(
    ("path", "normal"),
    [
        ("/work/repo/src/a.py", "/work/repo/src/a.py"),
        ("/work/repo/src/", "/work/repo/src"),
        ("/work//repo/./src/../lib/a.py", "/work/repo/lib/a.py"),
        ("/work/repo/.config/a", "/work/repo/.config/a"),
        ("/work/repo/a.", "/work/repo/a."),
        ("/", "/"),
        ("\\work\\repo\\a.py", "/work/repo/a.py"),
        ("C:\\Work\\a.py", "c:/Work/a.py"),
        ("src/a.py", None),
    ],
)
def test_paths_normalise_lexically_whether_or_not_they_already_are(
    path: str, normal: str | None
) -> None:
    from active_memory.recall.signals import _normalise

    assert _normalise(path) == normal


_PATHISH = st.text(alphabet=st.sampled_from(list("ab_C9/.\\:*?{$~é -")), max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["file_path", "filePath", "path", "filename", "paths"]),
    _PATHISH | _PATHISH.map(lambda path: f"{WORKSPACE}/{path}"),
    st.sampled_from([None, WORKSPACE, f"{WORKSPACE}/src", "/elsewhere", "src"]),
    st.sampled_from(["Read", "Glob", "find"]),
)
def test_a_call_naming_one_path_reads_as_any_other_call_does(
    field: str, path: str, cwd: str | None, tool: str
) -> None:
    # Numbers give no signal; a list holding nothing readable sends the same call the long way.
    alone = extract_signals(ToolCall(tool, {field: path, "limit": 20, "all": True}, cwd), ROOT)
    general = extract_signals(ToolCall(tool, {field: path, "limit": 20, "more": [{}]}, cwd), ROOT)
    assert alone == general


@settings(max_examples=300, deadline=None)
@given(st.lists(ALNUM_AND_MORE, max_size=4))
def test_topic_words_of_new_runs_from_known_chunks_are_the_words_of_the_whole_run(
    texts: list[str],
) -> None:
    from active_memory.limits import BROAD_WORDS, LIMITS
    from active_memory.recall import signals

    low, high = LIMITS.keyword_min_chars, LIMITS.keyword_max_chars
    for text in texts:  # earlier texts leave their runs and chunks known
        found = extract_signals(ToolCall("Tool", {"text": text}), ROOT).words
        runs = IDENTIFIER_RUN.findall(text)
        expected = {word for run in runs for word in split_words(run)
                    if low <= len(word) <= high and word not in BROAD_WORDS}  # fmt: skip
        assert found == expected
        for run in runs:
            signals._RUN_WORDS.pop(run, None)  # the run is new next time, its chunks are not
