"""The run's recall index kept in a file: reused for the same rows only, never trusted blindly."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.errors import ConfigError
from active_memory.host import open_run
from active_memory.models.changes import Mutation, Publication
from active_memory.models.config import RuntimeConfig
from active_memory.recall import index_file
from active_memory.recall.index import RecallIndex
from active_memory.recall.index_file import (
    MAGIC,
    content_key,
    load_or_build,
    read_state,
    write_state,
)
from active_memory.recall.signals import Signals
from active_memory.store.backend import RunIdentity
from active_memory.store.paths import default_store_path
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from recall.kit import (
    GRAPH,
    REPOSITORY,
    graph_lesson,
    lesson,
    lesson_id,
    seed_store,
    widgets_checkout,
)
from recall.test_index_equivalence import (
    REPOSITORY as ENTRIES_REPOSITORY,
    entries_strategy,
    matched,
    signals_strategy,
)

ENTRIES = [
    ("lesson-1", 1, "Card 1", "Do 1.", REPOSITORY, ("src/a.py",), (), ("load",), ()),
    ("lesson-2", 2, "Card 2", "Do 2.", REPOSITORY, (), ("src",), (), (("alpha", "beta"),)),
]
CHECKSUMS = ("c1", "c2")
CALL = Signals(("src/a.py",), frozenset({"load"}), frozenset({"alpha", "beta"}))


def built(folder: Path, checksums: tuple[str, ...] = CHECKSUMS) -> tuple[RecallIndex, bool]:
    return load_or_build(folder, REPOSITORY, checksums, lambda: iter(ENTRIES))


def kept_file(folder: Path) -> Path:
    return Path(index_file.index_file(folder, REPOSITORY))


def test_a_second_start_over_the_same_rows_loads_the_file(tmp_path: Path) -> None:
    first, from_file = built(tmp_path)
    assert not from_file
    path = kept_file(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    again, from_file = load_or_build(tmp_path, REPOSITORY, CHECKSUMS, pytest.fail)
    assert from_file
    assert matched(again, CALL) == matched(first, CALL) != []


def test_changed_rows_build_again_and_replace_the_file(tmp_path: Path) -> None:
    built(tmp_path)
    changed = (*ENTRIES[:1], ("lesson-3", 1, "Card 3", "Do 3.", REPOSITORY, ("src/a.py",),
                              (), (), ()))  # fmt: skip
    index, from_file = load_or_build(tmp_path, REPOSITORY, ("c1", "c3"), lambda: iter(changed))
    assert not from_file
    assert [match.lesson.id for match in index.match(CALL)] == ["lesson-1", "lesson-3"]
    again, from_file = load_or_build(tmp_path, REPOSITORY, ("c1", "c3"), pytest.fail)
    assert from_file
    assert matched(again, CALL) == matched(index, CALL)


def test_the_key_names_the_repository_and_every_row_in_order() -> None:
    keys = {
        content_key(REPOSITORY, ("c1", "c2")),
        content_key(REPOSITORY, ("c2", "c1")),
        content_key(REPOSITORY, ("c1",)),
        content_key("forge:example.com/other", ("c1", "c2")),
    }
    assert len(keys) == 4


def damaged(data: bytes) -> list[bytes]:
    middle = len(data) // 2
    return [
        data[:middle],  # truncated
        data[:middle] + bytes([data[middle] ^ 1]) + data[middle + 1 :],  # one bit flipped
        data[len(MAGIC) :],  # no header
        b"",
        b"not an index at all",
        MAGIC + b"\0" * 32,
    ]


@pytest.mark.parametrize("case", range(6))
def test_a_damaged_file_is_ignored_and_rebuilt(tmp_path: Path, case: int) -> None:
    built(tmp_path)
    path = kept_file(tmp_path)
    path.write_bytes(damaged(path.read_bytes())[case])
    assert read_state(str(path), content_key(REPOSITORY, CHECKSUMS)) is None
    index, from_file = built(tmp_path)
    assert not from_file
    assert [match.lesson.id for match in index.match(CALL)] == ["lesson-1", "lesson-2"]
    assert built(tmp_path)[1]  # written whole again


def test_a_state_that_does_not_restore_is_rebuilt(tmp_path: Path) -> None:
    path = kept_file(tmp_path)
    key = content_key(REPOSITORY, CHECKSUMS)
    assert write_state(str(path), key, ("not", "a", "state"))  # type: ignore[arg-type]
    index, from_file = built(tmp_path)
    assert not from_file
    assert len(index) == 2


def test_another_format_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built(tmp_path)
    monkeypatch.setattr(index_file, "FORMAT", ("active-memory/run-index", 0))
    assert not built(tmp_path)[1]


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership and modes")
def test_a_file_or_folder_others_can_use_is_not_read(tmp_path: Path) -> None:
    built(tmp_path)
    path = kept_file(tmp_path)
    key = content_key(REPOSITORY, CHECKSUMS)
    path.chmod(0o644)
    assert read_state(str(path), key) is None
    path.chmod(0o600)
    tmp_path.chmod(0o755)
    assert read_state(str(path), key) is None
    tmp_path.chmod(0o700)
    assert read_state(str(path), key) is not None


def test_a_symlinked_file_or_folder_is_neither_read_nor_written(tmp_path: Path) -> None:
    real = tmp_path / "real"
    built(real)
    key = content_key(REPOSITORY, CHECKSUMS)
    link = tmp_path / "link"
    link.symlink_to(real)
    assert read_state(index_file.index_file(link, REPOSITORY), key) is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (elsewhere / kept_file(real).name).symlink_to(kept_file(real))
    assert read_state(str(elsewhere / kept_file(real).name), key) is None
    kept = kept_file(real).stat().st_ino
    assert not built(link)[1]  # built, and not written through the link
    assert kept_file(real).stat().st_ino == kept


def test_concurrent_writers_never_leave_half_a_file(tmp_path: Path) -> None:
    path = str(kept_file(tmp_path))
    states = {
        str(number): RecallIndex.from_entries(ENTRIES[: number + 1], repository=REPOSITORY).state()
        for number in range(2)
    }
    done = threading.Event()

    def write(key: str) -> None:
        while not done.is_set():
            write_state(path, key, states[key])

    writers = [threading.Thread(target=write, args=(key,)) for key in states]
    write_state(path, "0", states["0"])
    for writer in writers:
        writer.start()
    try:
        copy = tmp_path / "copy" / "seen.index"
        copy.parent.mkdir(mode=0o700)
        for _ in range(200):
            copy.write_bytes(Path(path).read_bytes())  # one read: whichever file is there now
            copy.chmod(0o600)
            read = [read_state(str(copy), key) for key in states]
            assert [state is None for state in read].count(False) == 1
    finally:
        done.set()
        for writer in writers:
            writer.join()
    assert [name for name in os.listdir(tmp_path) if not name.endswith(".index")] == ["copy"]


@settings(max_examples=60, deadline=None)
@given(entries_strategy, st.lists(signals_strategy, min_size=1, max_size=10))
def test_a_loaded_index_matches_as_a_fresh_build(entries: list, calls: list[Signals]) -> None:
    checksums = [f"c{number}" for number in range(len(entries))]
    graph = (graph_lesson(90, "build", repository=ENTRIES_REPOSITORY),)
    with tempfile.TemporaryDirectory() as folder:
        fresh, _ = load_or_build(folder, ENTRIES_REPOSITORY, checksums, lambda: entries, graph)
        loaded, from_file = load_or_build(folder, ENTRIES_REPOSITORY, checksums, list, graph)
    assert from_file
    assert len(loaded) == len(fresh)
    for found in calls:
        assert matched(loaded, found) == matched(fresh, found)
    assert loaded.graph_lessons(GRAPH, "build", ENTRIES_REPOSITORY) == graph


def test_a_run_start_reuses_the_index_until_the_store_changes(tmp_path: Path) -> None:
    store = tmp_path / "lessons.sqlite3"
    seed_store(store, [lesson(1, files=["src/app.py"]), graph_lesson(2, "build")])
    checkout = widgets_checkout(tmp_path / "checkout")
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=GRAPH)
    path = kept_file(default_store_path().parent / "recall-index")
    call = Signals(("src/app.py",), frozenset(), frozenset())

    def started() -> tuple[list[str], int]:
        with SqliteStore(store) as backend, open_run(identity, RuntimeConfig(), backend,
                                                     checkout) as run:  # fmt: skip
            found = [match.lesson.id for match in run.session.index.match(call)]
            assert run.session.index.graph_lesson_count == 1
        return found, path.stat().st_ino

    first, written = started()
    assert first == [lesson_id(1)]
    assert started() == (first, written)  # loaded: the file was not written again
    seed_store(store, [lesson(3, files=["src/app.py"])])
    changed, rewritten = started()
    assert changed == [lesson_id(1), lesson_id(3)]
    assert rewritten != written


def test_a_folder_that_cannot_be_found_keeps_nothing_and_still_builds(tmp_path: Path) -> None:
    def unfindable() -> Path:
        raise ConfigError("ACTIVE_MEMORY_STATE_DIR", "'state' must be an absolute path")

    index, from_file = load_or_build(unfindable, REPOSITORY, CHECKSUMS, lambda: iter(ENTRIES))
    assert (from_file, len(index)) == (False, 2)
    assert load_or_build(lambda: tmp_path, REPOSITORY, CHECKSUMS, lambda: iter(ENTRIES))[0]
    assert load_or_build(lambda: tmp_path, REPOSITORY, CHECKSUMS, pytest.fail)[1]


def test_a_run_starts_when_its_state_folder_is_misconfigured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "lessons.sqlite3"
    seed_store(store, [lesson(1, files=["src/app.py"])])
    monkeypatch.setenv("ACTIVE_MEMORY_STATE_DIR", "relative/state")
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=GRAPH)
    with SqliteStore(store) as backend, open_run(identity, RuntimeConfig(), backend,
                                                 tmp_path / "checkout") as run:  # fmt: skip
        found = run.session.index.match(Signals(("src/app.py",), frozenset(), frozenset()))
    assert [match.lesson.id for match in found] == [lesson_id(1)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_in_place_of_the_file_is_not_waited_on(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    os.mkfifo(kept_file(tmp_path), 0o600)
    assert read_state(str(kept_file(tmp_path)), content_key(REPOSITORY, CHECKSUMS)) is None


def test_the_format_follows_every_source_that_decides_a_states_content(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The broad words decide which identifiers and keyword groups a state holds: an edit of
    # limits.py (same package version, an editable install) must retire every kept file.
    import active_memory.limits

    before = index_file._source_status()
    real_stat = os.stat
    edited = os.path.realpath(active_memory.limits.__file__)

    def stat_after_edit(path: str, *args: object, **kwargs: object) -> os.stat_result:
        info = real_stat(path, *args, **kwargs)  # type: ignore[arg-type]
        if os.path.realpath(path) != edited:
            return info
        fields = list(info)
        fields[6] += 1  # one byte longer
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", stat_after_edit)
    assert index_file._source_status() != before


def test_a_purge_leaves_no_text_of_the_lesson_in_a_kept_index(tmp_path: Path) -> None:
    # Purge is for a lesson that leaked a secret: its text must not live on in the index a run
    # start kept while it was live (no run start of that repository may ever come to replace it).
    store = tmp_path / "lessons.sqlite3"
    leaked = "Rotate the purple-walrus-4417 credential before editing src/app.py."
    seed_store(store, [lesson(1, files=["src/app.py"], recommendation=leaked)])
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=GRAPH)
    with SqliteStore(store) as backend:
        with open_run(identity, RuntimeConfig(), backend, tmp_path / "checkout"):
            pass
        backend.publish(Publication(run_id="run-2", mutations=(
            Mutation(op="retire", id=lesson_id(1), expected_revision=1),)))  # fmt: skip
    folder = default_store_path().parent / "recall-index"

    def holding() -> list[str]:
        return [entry.name for entry in folder.iterdir() if leaked.encode() in entry.read_bytes()]

    assert holding() == [kept_file(folder).name]
    purged = run_cli(["lessons", "purge", lesson_id(1), "--force", "--store", str(store)])
    assert purged.exit_code == 0, purged.stderr
    assert holding() == []


def test_forgetting_removes_only_kept_files_and_a_purge_warns_of_any_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "kept"
    built(folder)
    (folder / f".{kept_file(folder).name}.1.2.tmp").write_bytes(b"half")  # a killed write's
    (folder / "notes.txt").write_text("not ours to remove")
    (tmp_path / "link").symlink_to(folder)
    assert index_file.forget_kept(tmp_path / "link")  # not through a symlink
    assert index_file.forget_kept(tmp_path / "missing")
    assert len(os.listdir(folder)) == 3

    def refused(path: str) -> None:
        raise PermissionError(path)

    with monkeypatch.context() as patched:
        patched.setattr(os, "unlink", refused)
        assert not index_file.forget_kept(folder)
    assert index_file.forget_kept(folder)
    assert os.listdir(folder) == ["notes.txt"]

    store = tmp_path / "lessons.sqlite3"
    seed_store(store, [lesson(1, files=["src/app.py"])])
    with SqliteStore(store) as backend:
        backend.publish(Publication(run_id="run-2", mutations=(
            Mutation(op="retire", id=lesson_id(1), expected_revision=1),)))  # fmt: skip
    monkeypatch.setattr(index_file, "forget_kept", lambda folder: False)
    purged = run_cli(["lessons", "purge", lesson_id(1), "--force", "--store", str(store)])
    assert purged.exit_code == 0, purged.stderr
    assert "recall index files kept in" in purged.stderr
    assert "could not all be removed" in purged.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX ownership")
def test_forgetting_removes_nothing_of_another_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store may sit in a folder others can write, where another user made `exposure`
    # first: nothing of this user's is kept there, and nothing there is this user's to remove.
    folder = tmp_path / "kept"
    built(folder)
    (folder / "planted.index").write_bytes(b"another user's")
    with monkeypatch.context() as patched:
        patched.setattr(os, "geteuid", lambda: os.getuid() + 1)  # the folder is another user's
        assert index_file.forget_kept(folder)
    assert sorted(os.listdir(folder)) == sorted([kept_file(folder).name, "planted.index"])
    if os.geteuid() == 0:  # only root can give a file to another user
        os.chown(folder / "planted.index", 65534, 65534)
        assert index_file.forget_kept(folder)
        assert os.listdir(folder) == ["planted.index"]


def test_a_state_too_big_to_be_read_back_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every start would pay for writing a file that no start reads.
    monkeypatch.setattr(index_file, "MAX_FILE_BYTES", 200)
    index, from_file = built(tmp_path)
    assert (len(index), from_file) == (2, False)
    assert not kept_file(tmp_path).exists()
    assert not write_state(str(kept_file(tmp_path)), "key", index.state())
