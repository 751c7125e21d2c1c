"""Hostile input through the CLI: success, or one sentence and exit 2; never a traceback, a
hang past its bound, or a file written.

Each reader is fuzzed with hypothesis (run records through ``evidence``, import lines through
``lessons import``, runtime JSON through ``postmortem --runtime``, transcripts through
``evidence``), and each special file is tried for real: FIFOs, ``/dev/zero`` and links to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import Result
from hypothesis import HealthCheck, given, settings, strategies as st

from active_memory.models.lessons import Lesson
from cli_runner import all_commands, run_cli
from factories import make_draft, make_graph_draft, tree_digest
from fixture_runs import RUNS
from hostile import hostile_bytes, one_sentence_or_success, planted

pytestmark = pytest.mark.timeout(600)
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RUN = RUNS / "clean-success"
RUN_DOCUMENT = json.loads((RUN / "run.json").read_text("utf-8"))
LINES = [
    Lesson.from_draft("lesson-01J00000000000000000000001", 3, make_draft()).model_dump(mode="json"),
    Lesson.from_draft("lesson-01J00000000000000000000002", 1, make_graph_draft()).model_dump(
        mode="json"
    ),
]
SRC = Path(__file__).resolve().parents[2] / "src"


def _cli(*args: str, stdin: bytes | None = None) -> Result:
    return run_cli(list(args), input=stdin)


@pytest.fixture
def run_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    return folder


# -- run records ---------------------------------------------------------------------------


@pytest.mark.slow
@settings(FUZZ, max_examples=150)
@given(data=st.one_of(planted(RUN_DOCUMENT), hostile_bytes()))
def test_fuzz_evidence_on_a_hostile_run_json(run_copy: Path, data: bytes) -> None:
    """Slow: 150 generated run records, each through the whole `evidence` command."""
    (run_copy / "run.json").write_bytes(data)
    before = tree_digest(run_copy)
    one_sentence_or_success(_cli("evidence", str(run_copy), "--json"))
    assert tree_digest(run_copy) == before


@settings(FUZZ, max_examples=60)
@given(
    lines=st.lists(st.one_of(hostile_bytes(), planted({"role": "user", "text": "x"})), max_size=6)
)
def test_fuzz_evidence_on_hostile_transcript_lines(run_copy: Path, lines: list[bytes]) -> None:
    transcript = run_copy / "transcripts" / "implement-1.jsonl"
    transcript.write_bytes(b"\n".join(lines))
    before = tree_digest(run_copy)
    # Transcript lines are evidence, not input to validate: any content is shown or cut.
    result = _cli("evidence", str(run_copy), "--json")
    assert not one_sentence_or_success(result), result.stderr
    assert tree_digest(run_copy) == before


@needs_fifo
@pytest.mark.parametrize("which", ["run.json", "transcripts/implement-1.jsonl"])
def test_evidence_on_a_run_whose_file_is_a_fifo_is_refused_at_once(
    run_copy: Path, which: str
) -> None:
    (run_copy / which).unlink()
    os.mkfifo(run_copy / which)
    result = _cli("evidence", str(run_copy))
    assert one_sentence_or_success(result)
    assert "is a FIFO (named pipe), not a regular file" in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_evidence_on_a_run_json_linked_to_dev_zero_is_refused_by_a_real_process(
    run_copy: Path,
) -> None:
    (run_copy / "run.json").unlink()
    (run_copy / "run.json").symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "active_memory.cli.main", "evidence", str(run_copy)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "run.json: is a character device, not a regular file" in done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_transcript_linked_to_dev_zero_is_named_by_its_type(run_copy: Path) -> None:
    transcript = run_copy / "transcripts" / "implement-1.jsonl"
    transcript.unlink()
    transcript.symlink_to("/dev/zero")
    result = _cli("evidence", str(run_copy))
    assert one_sentence_or_success(result)
    assert "'transcripts/implement-1.jsonl' is a character device, not a regular file" in (
        result.stderr
    )
    assert "leaves the record folder" not in result.stderr
    assert "$:" not in result.stderr


# -- import lines --------------------------------------------------------------------------


@settings(FUZZ, max_examples=300)
@given(
    lines=st.lists(
        st.one_of(planted(LINES[0]), planted(LINES[1]), hostile_bytes()), min_size=1, max_size=3
    )
)
def test_fuzz_import_of_hostile_lines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]
) -> None:
    folder = tmp_path_factory.mktemp("import")
    source = folder / "lines.jsonl"
    source.write_bytes(b"\n".join(lines))
    store = folder / "state" / "lessons.sqlite3"
    result = _cli("lessons", "import", str(source), "--store", str(store))
    if one_sentence_or_success(result):
        assert not store.parent.exists(), "a refused import left a state directory behind"


@pytest.mark.parametrize(
    "revision",
    [str(2**53), str(2**63 - 1), str(2**63), str(2**64), "1" + "0" * 5000],
    ids=["2^53", "2^63-1", "2^63", "2^64", "10^5000"],
)
def test_import_of_a_revision_past_the_bound_is_one_sentence_and_creates_nothing(
    tmp_path: Path, revision: str
) -> None:
    line = json.dumps({**LINES[0], "revision": 1}).replace(
        '"revision": 1', f'"revision": {revision}'
    )
    source = tmp_path / "lines.jsonl"
    source.write_text(line + "\n")
    store = tmp_path / "state" / "lessons.sqlite3"
    result = _cli("lessons", "import", str(source), "--store", str(store))
    assert one_sentence_or_success(result)
    assert "line 1" in result.stderr
    assert not store.parent.exists()


@needs_fifo
def test_import_of_a_fifo_or_dev_zero_is_refused_by_a_real_process(tmp_path: Path) -> None:
    fifo = tmp_path / "lines.jsonl"
    os.mkfifo(fifo)
    link = tmp_path / "zero.jsonl"
    link.symlink_to("/dev/zero")
    for source, kind in ((fifo, "a FIFO"), (Path("/dev/zero"), "a character device"),
                         (link, "a character device")):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "active_memory.cli.main", "lessons", "import", str(source),
             "--store", str(tmp_path / "state" / "lessons.sqlite3")],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert (
            done.stderr
            == f"error: {str(source)!r} is {kind}"
            + (" (named pipe)" if kind == "a FIFO" else "")
            + ", not a regular file; pass a regular file\n"
        )
    assert not (tmp_path / "state").exists()


def test_import_from_an_endless_stdin_stops_at_the_limit(tmp_path: Path) -> None:
    store = tmp_path / "state" / "lessons.sqlite3"
    with open("/dev/zero", "rb") as endless:
        done = subprocess.run(
            [sys.executable, "-m", "active_memory.cli.main", "lessons", "import", "-",
             "--store", str(store)],
            stdin=endless, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: standard input is more than ")
    assert not store.parent.exists()


# -- runtime JSON --------------------------------------------------------------------------


def _postmortem_with_runtime(run: Path, runtime: Path, tmp: Path) -> Result:
    # A missing recording ends every accepted runtime in one sentence before any work.
    return _cli(
        "postmortem", str(run), "--runtime", str(runtime), "--provider", "replay",
        "--exchanges", str(tmp / "missing.jsonl"), "--store", str(tmp / "state" / "l.sqlite3"),
    )  # fmt: skip


@settings(FUZZ, max_examples=40)
@given(data=st.one_of(planted({"activeMemory": {"repository": True}}), hostile_bytes()))
def test_fuzz_postmortem_with_a_hostile_runtime_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("runtime")
    runtime = folder / "runtime.json"
    runtime.write_bytes(data)
    result = _postmortem_with_runtime(RUN, runtime, folder)
    assert one_sentence_or_success(result)
    assert not (folder / "state").exists()


@needs_fifo
def test_postmortem_with_a_fifo_as_runtime_or_recording_is_refused(
    tmp_path: Path, run_copy: Path
) -> None:
    fifo = tmp_path / "runtime.json"
    os.mkfifo(fifo)
    result = _postmortem_with_runtime(RUN, fifo, tmp_path)
    assert one_sentence_or_success(result)
    assert "is a FIFO (named pipe)" in result.stderr
    (run_copy / "exchanges.jsonl").unlink()
    os.mkfifo(run_copy / "exchanges.jsonl")
    result = _cli("postmortem", str(run_copy), "--provider", "replay", "--store",
                  str(tmp_path / "state" / "l.sqlite3"))  # fmt: skip
    assert one_sentence_or_success(result)
    assert "recording" in result.stderr
    assert "is a FIFO (named pipe)" in result.stderr
    assert not (tmp_path / "state").exists()


# -- hook payloads -------------------------------------------------------------------------


@settings(FUZZ, max_examples=100)
@given(data=st.one_of(planted({"tool_name": "Read", "tool_input": {"file_path": "a.py"}}),
                      hostile_bytes()))  # fmt: skip
def test_fuzz_recall_with_a_hostile_hook_payload(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("recall")
    payload = folder / "payload.json"
    payload.write_bytes(data)
    store = folder / "state" / "lessons.sqlite3"
    result = _cli("recall", "--repository", str(folder), "--tool-json", str(payload),
                  "--store", str(store))  # fmt: skip
    # A payload read and understood meets a store that does not exist yet: exit 1.
    one_sentence_or_success(result, failure_codes=(1, 2))
    assert not store.parent.exists()


@needs_fifo
def test_recall_with_a_fifo_payload_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "payload.json"
    os.mkfifo(fifo)
    result = _cli("recall", "--repository", str(tmp_path), "--tool-json", str(fifo))
    assert one_sentence_or_success(result)
    assert "is a FIFO (named pipe)" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["lessons", "revert", "lesson-01J00000000000000000000001", "--to", "9" * 5000],
        ["lessons", "revert", "lesson-01J00000000000000000000001", "--to", "9" * 1000],
        ["lessons", "show", "lesson-" + "A" * 5000],
        ["sessions", "--since", "9" * 5000],
        ["recall", "--tokens", "7" * 5000],
        ["lessons", "retire", "lesson-01J00000000000000000000001", "--expected", "9" * 5000],
        ["specialist", "prompt", "repository_maintenance", str(RUNS / "clean-success"),
         "--batch", "9" * 5000],
    ],
    ids=["to-5000", "to-1000", "id", "since", "tokens", "expected", "batch"],
)  # fmt: skip
def test_a_long_argument_is_quoted_cut_to_40_characters(tmp_path: Path, args: list[str]) -> None:
    store = [] if args[0] == "sessions" else ["--store", str(tmp_path / "s.sqlite3")]
    result = _cli(*args, *store)
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "…" in result.stderr
    assert len(result.stderr) < 600, result.stderr
    assert not (tmp_path / "s.sqlite3").exists()


def test_every_integer_option_quotes_a_long_value_cut() -> None:
    """click's own IntRange echoes all 5,000 digits of a value it refuses; BoundedInt cuts it."""
    plain = [f"{name} {param.opts[0]}" for name, command in all_commands() for param in
             command.params if type(param.type) is click.IntRange]  # fmt: skip
    assert plain == []
