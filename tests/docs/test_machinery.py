"""The machinery the page tests share: it must fail, naming the page, block and difference,
when a command's output changes, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs.compare import compare
from docs.pages import parse
from docs.transcript import run_commands, steps

PAGE = """\
<!-- example: sample -->
```console
$ tool report
run          run-7
status       completed in 0.75 s
  graph_discovery         published      1      6300/760     487 ms
hashes       prompt <sha16>
[exit 1]

$ tool list
…
3 lessons
```
"""
[BLOCK] = parse("docs/sample.md", PAGE)
REAL = """\
$ tool report
run          run-7
status       completed in 12.31 s
  graph_discovery         published      1      6300/760    1487 ms
hashes       prompt 0123456789abcdef
[exit 1]

$ tool list
lesson-1
lesson-2
lesson-3
3 lessons"""


def test_steps_are_the_commands_with_their_output_exit_and_gap() -> None:
    report, listing = steps(BLOCK)
    assert report.command == "tool report"
    assert report.shown[-1] == "[exit 1]"
    assert report.exit_shown
    assert report.gap == 1
    assert (listing.command, listing.shown, listing.exit_shown) == (
        "tool list",
        ("…", "3 lessons"),
        False,
    )


def test_times_placeholders_and_elisions_match_what_they_stand_for() -> None:
    compare(BLOCK, BLOCK.body, REAL)


def test_a_changed_line_fails_naming_the_page_the_block_and_the_difference() -> None:
    changed = REAL.replace("3 lessons", "4 lessons")
    with pytest.raises(pytest.fail.Exception) as failed:
        compare(BLOCK, BLOCK.body, changed)
    assert (
        str(failed.value)
        .splitlines()[0]
        .startswith("docs/sample.md:2 (example: sample): the output differs from the page")
    )
    assert "~4 lessons\n-3 lessons" in str(failed.value)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("6300/760", "6300/761"),  # a token count is not a time
        ("prompt 0123456789abcdef", "prompt 0123456789abcdeg"),  # nor a hash
        ("[exit 1]", "[exit 2]"),
    ],
)
def test_only_volatile_values_are_ignored(before: str, after: str) -> None:
    with pytest.raises(pytest.fail.Exception):
        compare(BLOCK, BLOCK.body, REAL.replace(before, after))


def test_commands_share_one_shell_and_keep_their_exit_status(tmp_path: Path) -> None:
    ran = run_commands(["cd sub 2>/dev/null || mkdir sub && cd sub", "pwd", "false", "echo $?"],
                       tmp_path)  # fmt: skip
    assert ran == [("", 0), (f"{tmp_path / 'sub'}\n", 0), ("", 1), ("1\n", 0)]
