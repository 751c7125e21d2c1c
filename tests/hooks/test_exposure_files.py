"""The on-disk exposure ledger shared by ``serve`` and the store fallback: whole lines only,
appended by several processes at once, bounded, pruned, trusted only when private."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from active_memory.hooks import exposure_files
from active_memory.hooks.exposure_files import (
    MAX_LEDGER_BYTES,
    MAX_LEDGER_KEYS,
    ExposureFiles,
    append_keys,
    exposure_file,
    is_exposure_key,
    read_keys,
)
from active_memory.models.ids import lesson_id_problem, new_lesson_id
from recall.kit import lesson_id

DAY = 24 * 3600


@pytest.fixture
def files(tmp_path: Path) -> ExposureFiles:
    return ExposureFiles(tmp_path / "lessons.sqlite3", str(tmp_path / "workspace"))


def key(number: int, revision: int = 1) -> str:
    return f"{lesson_id(number)}@{revision}"


def test_keys_recorded_are_loaded_back_per_conversation(files: ExposureFiles) -> None:
    assert files.load("c1") == []
    files.record("c1", [key(1), key(2)])
    files.record("c1", [key(3), key(1)])
    files.record("c2", [key(9)])
    assert files.load("c1") == [key(1), key(2), key(3)]
    assert files.load("c2") == [key(9)]
    path = Path(files.path("c1"))
    assert path == Path(exposure_file(files.store, files.workspace, "c1"))
    assert (oct(path.stat().st_mode & 0o777), oct(path.parent.stat().st_mode & 0o777)) == (
        "0o600", "0o700")  # fmt: skip


def test_only_the_exposure_folder_is_made_never_the_stores(tmp_path: Path) -> None:
    files = ExposureFiles(tmp_path / "missing" / "lessons.sqlite3", str(tmp_path))
    files.record("c1", [key(1)])
    assert not (tmp_path / "missing").exists()
    assert files.load("c1") == []


def test_a_torn_line_is_ignored_and_the_next_record_starts_a_line(files: ExposureFiles) -> None:
    path = Path(files.path("c1"))
    files.record("c1", [key(1)])
    with path.open("ab") as handle:
        handle.write(key(2).encode()[:20])  # a crash in the middle of a write
    assert files.load("c1") == [key(1)]
    files.record("c1", [key(3)])
    assert files.load("c1") == [key(1), key(3)]
    assert path.read_bytes().split(b"\n")[-2] == key(3).encode()


def test_foreign_and_malformed_lines_are_ignored(files: ExposureFiles) -> None:
    path = Path(files.path("c1"))
    files.record("c1", [key(1)])
    with path.open("ab") as handle:
        foreign = [
            b"lesson-1@1", b"not a key", key(2).encode() + key(3).encode(), b"\xff\xfe@1",
            f"{lesson_id(4)}@0".encode(), f"{lesson_id(4)}@".encode(),
            f"{lesson_id(4)}@\u0661".encode(), f"{lesson_id(5)}@2 ".encode(), b"",
            key(6).encode(),
        ]  # fmt: skip
        handle.write(b"\n".join(foreign) + b"\n")
    assert files.load("c1") == [key(1), key(6)]


def test_a_malformed_key_is_never_written(files: ExposureFiles) -> None:
    files.record("c1", ["lesson-x@1", f"{key(1)}\n{key(2)}", key(3)])
    assert Path(files.path("c1")).read_text() == f"{key(3)}\n"


def test_the_key_check_follows_the_lesson_id_format() -> None:
    for _ in range(50):
        lesson = new_lesson_id()
        assert lesson_id_problem(lesson) is None
        assert is_exposure_key(f"{lesson}@1")
        assert is_exposure_key(f"{lesson}@123456789012")
        assert not is_exposure_key(f"{lesson}@1234567890123")
    for wrong in ("I", "L", "O", "U", "a"):  # not in Crockford's alphabet, as in models.ids
        lesson = "lesson-" + wrong * 26
        assert lesson_id_problem(lesson) is not None
        assert not is_exposure_key(f"{lesson}@1")


# Appends RECORDS records of three keys, each from this process's own range of lesson numbers.
APPENDER = """
import sys
from active_memory.hooks.exposure_files import ExposureFiles
store, workspace, first, records = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
files = ExposureFiles(store, workspace)
for number in range(first, first + 3 * records, 3):
    files.record("shared", [f"lesson-{n:026d}@1" for n in (number, number + 1, number + 2)])
"""


def test_concurrent_appends_from_several_processes_lose_no_line(files: ExposureFiles) -> None:
    processes, records = 6, 40
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    running = []
    for worker in range(processes):
        first = str(1 + worker * 3 * records)
        argv = [sys.executable, "-c", APPENDER, files.store, files.workspace, first, str(records)]
        running.append(subprocess.Popen(argv, env=env))
    assert [process.wait(timeout=60) for process in running] == [0] * processes
    expected = {key(number) for number in range(1, 1 + processes * 3 * records)}
    lines = Path(files.path("shared")).read_bytes().split(b"\n")
    assert lines[-1] == b""
    # None torn: every line is a whole key. A writer that reads the tail while another's append
    # is landing may start its own line early; the empty line that leaves is harmless.
    assert sorted(line.decode() for line in lines[:-1] if line) == sorted(expected)
    assert set(files.load("shared")) == expected


def test_a_ledger_is_bounded_in_keys_read_and_bytes_written(
    files: ExposureFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(files.path("c1"))
    path.parent.mkdir(mode=0o700)
    path.write_text("".join(f"{key(n)}\n" for n in range(1, MAX_LEDGER_KEYS + 11)))
    path.chmod(0o600)
    loaded = files.load("c1")
    assert loaded == [key(n) for n in range(1, MAX_LEDGER_KEYS + 1)]
    monkeypatch.setattr(exposure_files, "MAX_LEDGER_BYTES", path.stat().st_size)
    size = path.stat().st_size
    assert not append_keys(str(path), [key(99_999)])  # full: nothing more is appended
    assert path.stat().st_size == size
    assert size < MAX_LEDGER_BYTES


def test_a_ledger_larger_than_the_read_cap_is_not_read(files: ExposureFiles) -> None:
    path = Path(files.path("c1"))
    path.parent.mkdir(mode=0o700)
    path.write_bytes(f"{key(1)}\n".encode() * (exposure_files.MAX_READ_BYTES // 34 + 1))
    path.chmod(0o600)
    assert files.load("c1") == []
    assert read_keys(str(path)) == []


def test_recording_prunes_old_ledgers_but_not_its_own(files: ExposureFiles) -> None:
    path = Path(files.path("c1"))
    files.record("c1", [key(1)])
    (path.parent / ".pruned").unlink()  # as if the last prune was long ago
    old = time.time() - 30 * DAY
    forgotten = path.parent / "forgotten.keys"
    forgotten.write_text(f"{key(2)}\n")
    for stale in (forgotten, path):
        os.utime(stale, (old, old))
    files.record("c1", [key(3)])
    assert not forgotten.exists()
    assert files.load("c1") == [key(1), key(3)]


def test_a_ledger_in_a_folder_others_can_use_is_neither_read_nor_written(
    files: ExposureFiles,
) -> None:
    files.record("c1", [key(1)])
    folder = Path(files.path("c1")).parent
    folder.chmod(0o755)
    try:
        assert files.load("c1") == []
        files.record("c1", [key(2)])
        assert Path(files.path("c1")).read_text() == f"{key(1)}\n"
    finally:
        folder.chmod(0o700)
