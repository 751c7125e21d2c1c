"""`-` reads standard input as bytes without an API click deprecates, and a closed standard
input is one sentence and exit 2."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

from active_memory.models.lessons import Lesson
from cli_runner import run_cli
from factories import make_draft

LINE = json.dumps(
    Lesson.from_draft("lesson-01J00000000000000000000001", 1, make_draft()).model_dump(mode="json")
)


def test_lessons_import_reads_stdin_without_a_deprecated_click_call(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite3"
    with warnings.catch_warnings():
        # click 8.5 deprecates get_binary_stream (gone in 9.0): its warning fails the test.
        warnings.simplefilter("error", DeprecationWarning)
        result = run_cli(
            ["lessons", "import", "-", "--store", str(store), "--json"],
            input=LINE + "\n",
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["created"] == ["lesson-01J00000000000000000000001"]


def test_recall_reads_a_payload_on_stdin_without_a_deprecated_click_call(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        result = run_cli(["recall", "--repository", str(tmp_path),
                          "--store", str(tmp_path / "s.sqlite3"), "--tool-json", "-"],
                         input="[]")  # fmt: skip
    # Not a hook payload: refused as bad input, after stdin was read.
    assert result.exit_code == 2
    assert "is not a hook payload" in result.stderr


def test_import_with_standard_input_closed_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    command = shlex.join([sys.executable, "-m", "active_memory.cli.main", "lessons", "import",
                          "-", "--store", str(tmp_path / "s.sqlite3")])  # fmt: skip
    # `<&-` starts the interpreter with descriptor 0 closed, so sys.stdin is None.
    done = subprocess.run(["sh", "-c", command + " <&-"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: standard input is closed; give a file instead of `-`\n"
