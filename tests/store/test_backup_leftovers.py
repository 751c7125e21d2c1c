"""A killed ``store backup`` leaves its temporary; the next backup or ``store check`` removes
it, and never a temporary whose process still runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from factories import make_draft

pytestmark = pytest.mark.timeout(120)
SRC = Path(__file__).resolve().parents[2] / "src"

# A backup that stops for good half-way through its copy, to be killed there.
STALLED_BACKUP = """
import sys, time
from pathlib import Path
import active_memory.store.backup as backup
from active_memory.store.sqlite import SqliteStore

def stalled(conn, temporary):
    Path(temporary).write_bytes(b"half a copy" * 1000)
    print("copying", flush=True)
    time.sleep(600)

backup._copy = stalled
with SqliteStore(sys.argv[1], read_only=True) as store:
    store.backup(sys.argv[2])
"""

# A real copy, page by page, killed after its first page: SQLite has the temporary's rollback
# journal open (hot) by then, and the kill leaves it beside the temporary.
KILLED_MID_COPY = """
import sys, time
import active_memory.store.backup as backup
from active_memory.store.sqlite import SqliteStore

real_connect = backup.sqlite3.connect

def page_by_page(conn, temporary):
    copy = real_connect(temporary, isolation_level=None)
    def progress(status, remaining, total):
        print("copying", flush=True)
        time.sleep(600)
    conn.backup(copy, pages=1, progress=progress)

backup._copy = page_by_page
with SqliteStore(sys.argv[1], read_only=True) as store:
    store.backup(sys.argv[2])
"""


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "lessons.sqlite3"
    with SqliteStore(path) as opened:
        opened.publish(
            Publication(
                run_id="run-1",
                mutations=(
                    Mutation(
                        op="upsert",
                        id="lesson-01J00000000000000000000001",
                        expected_revision=0,
                        draft=make_draft(),
                    ),
                ),
            )
        )
    return path


def _leftovers(*folders: Path) -> list[str]:
    return sorted(p.name for f in folders for p in f.iterdir() if ".backup-" in p.name)


def _killed_backup(store: Path, destination: Path, script: str = STALLED_BACKUP) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(store), str(destination)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "copying"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)


def test_store_check_removes_what_a_sigkilled_backup_left(store: Path, tmp_path: Path) -> None:
    backups = tmp_path / "backups"
    backups.mkdir()
    _killed_backup(store, backups / "copy.sqlite3")
    left = _leftovers(store.parent, backups)
    assert len(left) == 2  # the half-written temporary and its marker beside the store
    assert not (backups / "copy.sqlite3").exists()

    result = run_cli(["store", "check", "--store", str(store)])

    assert result.exit_code == 0, result.output
    assert "removed a killed backup's temporary" in result.stdout
    assert _leftovers(store.parent, backups) == []


def test_a_backup_killed_mid_copy_leaves_a_hot_journal_that_check_removes(
    store: Path, tmp_path: Path
) -> None:
    backups = tmp_path / "backups"
    backups.mkdir()
    _killed_backup(store, backups / "copy.sqlite3", KILLED_MID_COPY)
    left = _leftovers(backups)
    assert any(name.endswith(".tmp-journal") for name in left), left
    stale = backups / next(n for n in left if n.endswith(".tmp"))
    for suffix in ("-wal", "-shm"):  # what a WAL-mode copy would leave
        stale.with_name(stale.name + suffix).write_bytes(b"x")

    result = run_cli(["store", "check", "--store", str(store)])

    assert result.exit_code == 0, result.output
    assert _leftovers(store.parent, backups) == []


def test_a_dead_pids_journal_is_swept_by_the_next_backup_without_a_marker(
    store: Path, tmp_path: Path
) -> None:
    dead = _dead_pid()
    journal = tmp_path / f".copy.sqlite3.backup-{dead}-{'c' * 16}.tmp-journal"
    journal.write_bytes(b"x")

    result = run_cli(["store", "backup", str(tmp_path / "copy.sqlite3"), "--store", str(store)])

    assert result.exit_code == 0, result.output
    assert not journal.exists()


def test_the_next_backup_removes_a_killed_backups_temporary(store: Path, tmp_path: Path) -> None:
    _killed_backup(store, tmp_path / "copy.sqlite3")
    assert len(_leftovers(store.parent, tmp_path)) == 2

    result = run_cli(["store", "backup", str(tmp_path / "copy.sqlite3"), "--store", str(store)])

    assert result.exit_code == 0, result.output
    assert _leftovers(store.parent, tmp_path) == []
    with SqliteStore(tmp_path / "copy.sqlite3", read_only=True) as copy:
        assert len(copy.list_lessons()) == 1


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


def test_a_temporary_of_a_dead_pid_is_removed_and_a_live_ones_is_kept(
    store: Path, tmp_path: Path
) -> None:
    dead, live = _dead_pid(), os.getppid()
    stale = tmp_path / f".copy.sqlite3.backup-{dead}-{'a' * 16}.tmp"
    running = tmp_path / f".copy.sqlite3.backup-{live}-{'b' * 16}.tmp"
    unrelated = tmp_path / ".copy.sqlite3.backup-notes.tmp"
    for path in (stale, running, unrelated):
        path.write_bytes(b"x")

    result = run_cli(["store", "backup", str(tmp_path / "copy.sqlite3"), "--store", str(store)])

    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert running.exists()
    assert unrelated.exists()


def test_a_backup_in_progress_is_not_swept_by_a_concurrent_check(
    store: Path, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", STALLED_BACKUP, str(store), str(tmp_path / "copy.sqlite3")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "copying"
        before = _leftovers(store.parent, tmp_path)
        result = run_cli(["store", "check", "--store", str(store)])
        assert result.exit_code == 0, result.output
        assert _leftovers(store.parent, tmp_path) == before
        assert len(before) == 2
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    # Killed and reaped: the same check now removes both.
    run_cli(["store", "check", "--store", str(store)])
    assert _leftovers(store.parent, tmp_path) == []


def test_a_purge_removes_what_a_killed_backup_left(store: Path, tmp_path: Path) -> None:
    # A killed backup's temporary is a copy of the store, the purged lesson's text included.
    backups = tmp_path / "backups"
    backups.mkdir()
    _killed_backup(store, backups / "copy.sqlite3", KILLED_MID_COPY)
    assert _leftovers(backups)
    retire = Mutation(op="retire", id="lesson-01J00000000000000000000001", expected_revision=1)
    with SqliteStore(store) as opened:
        opened.publish(Publication(run_id="run-2", mutations=(retire,)))

    result = run_cli(["lessons", "purge", retire.id, "--force", "--store", store])

    assert result.exit_code == 0, result.output
    assert _leftovers(store.parent, backups) == []
