"""Private folders and private files: 0700 and 0600 whatever the umask, written whole."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.errors import EvidenceError
from active_memory.evidence.private import prepare_private_dir
from active_memory.private_files import (
    copy_private_file,
    make_private_dir,
    write_private_bytes,
    write_private_lines,
    write_private_text,
)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would leave new files readable by everyone."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("loose_umask")
def test_a_new_private_folder_is_0700_whatever_the_umask(tmp_path: Path) -> None:
    folder = make_private_dir(tmp_path / "a" / "b")
    assert folder.is_dir()
    assert _mode(folder) == 0o700


def test_an_existing_folder_is_tightened_unless_told_to_keep_it(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    make_private_dir(shared, tighten=False)
    assert _mode(shared) == 0o755
    make_private_dir(shared)
    assert _mode(shared) == 0o700


def test_a_symlinked_folder_is_refused_and_nothing_is_changed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(OSError, match="symlink"):
        make_private_dir(link)
    assert _mode(target) == 0o755
    with pytest.raises(EvidenceError, match=r"private evidence folder .*link.*symlink"):
        prepare_private_dir(link)


def test_a_folder_the_user_named_is_used_through_a_symlink_as_it_is(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    assert make_private_dir(link, tighten=False) == link
    assert _mode(target) == 0o755


@pytest.mark.usefixtures("loose_umask")
def test_a_private_file_replaces_the_old_one_whole_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "ticket"
    path.write_text("old")
    os.chmod(path, 0o644)
    write_private_text(path, "new\n", durable=True)
    assert path.read_text() == "new\n"
    assert _mode(path) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ticket"]  # no temporary left


def test_a_failed_write_leaves_no_temporary_behind(tmp_path: Path) -> None:
    path = tmp_path / "missing-folder" / "ticket"
    with pytest.raises(FileNotFoundError):
        write_private_text(path, "x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("loose_umask")
def test_a_private_copy_streams_the_whole_file_with_mode_0600(tmp_path: Path) -> None:
    source = tmp_path / "transcript.jsonl"
    source.write_bytes(os.urandom(3 * (1 << 20) + 17))  # more than one chunk
    destination = tmp_path / "copy.jsonl"
    destination.write_text("old")
    copy_private_file(source, destination)
    assert destination.read_bytes() == source.read_bytes()
    assert _mode(destination) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.jsonl", "transcript.jsonl"]


def test_a_failed_copy_leaves_no_temporary_and_the_old_file(tmp_path: Path) -> None:
    destination = tmp_path / "copy.jsonl"
    destination.write_text("old")
    with pytest.raises(IsADirectoryError):
        copy_private_file(tmp_path, destination)
    assert destination.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.jsonl"]


@pytest.mark.usefixtures("loose_umask")
def test_lines_are_written_whole_and_private(tmp_path: Path) -> None:
    target = tmp_path / "copy.jsonl"
    write_private_lines(target, (f"{n}\n" for n in range(3)))
    assert target.read_text() == "0\n1\n2\n"
    assert _mode(target) == 0o600


def test_lines_that_fail_midway_leave_nothing(tmp_path: Path) -> None:
    def lines() -> Iterator[str]:
        yield "first\n"
        raise OSError("the transcript went away")

    target = tmp_path / "copy.jsonl"
    with pytest.raises(OSError, match="went away"):
        write_private_lines(target, lines())
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_at_the_temporarys_name_fails_the_write_instead_of_blocking_it(
    tmp_path: Path,
) -> None:
    """Planted while the folder was still open to others: the write fails at once (the caller
    treats that as any failed write) and the FIFO is removed with the rest of the attempt."""
    path = tmp_path / "x.index"
    os.mkfifo(tmp_path / f".x.index.{os.getpid()}.{threading.get_ident()}.tmp")
    with pytest.raises(OSError, match="No such device or address"):  # ENXIO: no reader
        write_private_bytes(path, b"data")
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name", ["x" * 249 + ".jsonl", "実" * 80 + "-12.jsonl"], ids=["ascii", "three-byte"]
)
def test_a_file_whose_name_fits_is_written_however_long_the_name(tmp_path: Path, name: str) -> None:
    """The temporary's name is the file's plus up to 34 bytes (pid and thread): cut to fit,
    or a name of more than 221 bytes (a transcript copy named by a long execution id) would
    fail with "File name too long"."""
    assert len(name.encode()) <= 255
    target = tmp_path / name
    write_private_text(target, "text")
    assert target.read_text(encoding="utf-8") == "text"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [path.name for path in tmp_path.iterdir()] == [name]
