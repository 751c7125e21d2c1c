from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from active_memory.errors import RunLogError
from active_memory.models.changes import Rejection
from active_memory.runlog import RunLog, read_events, read_run_log


def test_rejection_record_has_exactly_the_documented_fields(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "logs" / "run.jsonl")
    rejection = Rejection(stage="card", role="graph_discovery", code="title_too_long", index=2)
    log.append_rejection("run-1", rejection, time_ms=1234)
    line = (tmp_path / "logs" / "run.jsonl").read_text()
    assert line.endswith("\n")
    assert json.loads(line) == {
        "event": "rejection",
        "run_id": "run-1",
        "role": "graph_discovery",
        "stage": "card",
        "code": "title_too_long",
        "index": 2,
        "id": None,
        "time_ms": 1234,
    }


def test_log_file_is_private_and_its_folder_too(tmp_path: Path) -> None:
    path = tmp_path / "new" / "run.jsonl"
    RunLog(path).append_event("postmortem_started", run_id="run-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_existing_folder_is_left_as_it_is(tmp_path: Path) -> None:
    # The log may sit in the user's working directory: never tighten it.
    folder = tmp_path / "work"
    folder.mkdir()
    folder.chmod(0o755)
    RunLog(folder / "run.jsonl").append_event("postmortem_started", run_id="run-1")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755


def test_existing_world_readable_log_is_narrowed(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("")
    path.chmod(0o644)
    RunLog(path).append_event("postmortem_started", run_id="run-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_symlinked_log_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    (tmp_path / "run.jsonl").symlink_to(target)
    with pytest.raises(RunLogError, match="symlink"):
        RunLog(tmp_path / "run.jsonl").append_event("postmortem_started", run_id="run-1")
    assert target.read_text() == ""


def test_append_event_adds_time_and_keeps_allowed_fields(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "run.jsonl")
    record = log.append_event(
        "publication", run_id="run-1", generation=7, mutations=3, ids=["lesson-a", "lesson-b"]
    )
    assert isinstance(record["time_ms"], int)
    assert read_events(tmp_path / "run.jsonl") == (record,)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"title": "Cache the settings"}, "not allowed"),
        ({"recommendation": "x"}, "not allowed"),
        ({"reason_code": "the model said so"}, "short token without spaces"),
        ({"code": "x" * 201}, "short token"),
        ({"count": float("nan")}, "finite"),
        ({"ids": [{"nested": 1}]}, "unsupported type"),
        ({"ids": ["a"] * 257}, "more than 256"),
    ],
)
def test_fields_outside_the_allow_list_or_free_text_are_refused(
    tmp_path: Path, fields: dict[str, object], match: str
) -> None:
    path = tmp_path / "run.jsonl"
    with pytest.raises(RunLogError, match=match) as caught:
        RunLog(path).append_event("summary", **fields)  # type: ignore[arg-type]
    assert "the model said so" not in str(caught.value)
    assert not path.exists()


def test_event_kind_must_be_a_token(tmp_path: Path) -> None:
    with pytest.raises(RunLogError):
        RunLog(tmp_path / "run.jsonl").append_event("free text kind")
    with pytest.raises(RunLogError):
        RunLog(tmp_path / "run.jsonl").append_event("")


def test_a_torn_final_line_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    log.append_event("a", count=1)
    with path.open("a") as handle:
        handle.write('{"event":"b","cou')
    assert [r["event"] for r in read_events(path)] == ["a"]
    assert read_run_log(path).torn == 1
    assert read_events(tmp_path / "absent.jsonl") == ()


def test_appending_after_a_torn_line_starts_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    log = RunLog(path)
    log.append_event("a", count=1)
    with path.open("a") as handle:
        handle.write('{"event":"b","cou')
    log.append_event("c", count=3)
    lines = path.read_text().splitlines()
    assert lines[1] == '{"event":"b","cou'
    assert json.loads(lines[2])["event"] == "c"
    read = read_run_log(path)
    assert ([r["event"] for r in read.records], read.torn) == (["a", "c"], 1)


def test_torn_lines_anywhere_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"event":"a"}\n{"ev\n[1]\n\xff\n{"event":"b"}\n')
    read = read_run_log(path)
    assert [r["event"] for r in read.records] == ["a", "b"]
    assert read.torn == 3


_WRITER = """
import sys
from active_memory.runlog import RunLog
log = RunLog(sys.argv[1])
for n in range(int(sys.argv[3])):
    log.append_event("tick", run_id=sys.argv[2], index=n, ids=["x" * 150] * 40)
"""


def test_concurrent_writers_never_interleave_inside_a_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"w{n}", "150"])
        for n in range(4)
    ]
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0, 0, 0]
    records = read_events(path)
    assert len(records) == 600
    for n in range(4):
        indices = [r["index"] for r in records if r["run_id"] == f"w{n}"]
        assert indices == list(range(150))
    assert os.path.getsize(path) > 64 * 1024  # many pages: interleaving would have shown
