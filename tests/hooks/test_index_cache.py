"""The fallback's cached index: reused while it holds, rebuilt when anything it was built from
changed, never trusted when damaged."""

from __future__ import annotations

import json
import marshal
import os
import shutil
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from active_memory.errors import StoreUnavailable
from active_memory.hooks import index_cache
from active_memory.hooks.fallback import answer_from_store
from active_memory.hooks.index_cache import CachedIndex, load_index
from active_memory.models.changes import Mutation, Publication
from active_memory.private_files import write_private_bytes
from active_memory.recall.signals import Signals
from active_memory.repository import local_repository_key
from active_memory.store import rows as store_rows
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from recall.kit import (
    REPOSITORY,
    lesson,
    lesson_id,
    payload_in,
    seed_store,
    widgets_checkout,
    widgets_lessons,
)

CONFIG = Signals(("src/widgets/config.py",))


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    seed_store(store, widgets_lessons())
    return workspace, store


def load(workspace: Path, store: Path) -> CachedIndex:
    return load_index(str(store), str(workspace))


def matched(cached: CachedIndex, signals: Signals = CONFIG) -> list[str]:
    return [match.lesson.id for match in cached.index.match(signals)]


def test_a_repeated_call_uses_the_cached_index_without_rebuilding_it(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    first = load(workspace, store)
    assert (first.from_cache, first.repository, matched(first)) == (False, REPOSITORY,
                                                                   [lesson_id(1)])  # fmt: skip
    written = os.stat(first.path)
    assert (written.st_mode & 0o777, os.stat(Path(first.path).parent).st_mode & 0o777) == (
        0o600, 0o700)  # fmt: skip
    again = load(workspace, store)
    assert (again.from_cache, matched(again)) == (True, [lesson_id(1)])
    assert again.index.match(Signals(words=frozenset({"bedrock", "region"})))[0].score == 500
    assert os.stat(again.path).st_mtime_ns == written.st_mtime_ns  # not written again


def test_a_publication_makes_the_next_call_rebuild(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    load(workspace, store)
    seed_store(store, [lesson(7, files=["src/widgets/config.py"])])
    after = load(workspace, store)
    assert (after.from_cache, matched(after)) == (False, [lesson_id(1), lesson_id(7)])
    assert load(workspace, store).from_cache


def test_a_store_file_restored_over_the_store_makes_the_next_call_rebuild(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    backup = store.with_name("backup.sqlite3")
    shutil.copy2(store, backup)
    load(workspace, store)
    os.replace(backup, store)  # same generation and counters: only the file differs
    assert not load(workspace, store).from_cache


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"not marshal at all"),
        lambda path: path.write_bytes(path.read_bytes()[:100]),
        lambda path: path.write_bytes(marshal.dumps(("active-memory/hook-index", 0))),
        lambda path: path.write_bytes(marshal.dumps(
            (("another", "format"), *marshal.loads(path.read_bytes())[1:]))),
        lambda path: path.chmod(0o644),
    ],
    ids=["garbage", "truncated", "wrong shape", "other format", "readable by others"],
)  # fmt: skip
def test_a_damaged_or_foreign_cache_file_is_rebuilt(
    setup: tuple[Path, Path], damage: Callable[[Path], object]
) -> None:
    workspace, store = setup
    path = Path(load(workspace, store).path)
    damage(path)
    rebuilt = load(workspace, store)
    assert (rebuilt.from_cache, matched(rebuilt)) == (False, [lesson_id(1)])
    assert load(workspace, store).from_cache


def test_a_cached_index_gives_back_every_card_text_as_built(setup: tuple[Path, Path]) -> None:
    """The text columns are kept joined, with where each string ends (in characters): titles
    and recommendations outside ASCII, of any length, come back whole and in order."""
    workspace, store = setup
    advice = "Ça dépend: « toujours » vérifier l'unité."
    seed_store(store, [lesson(8, files=["src/widgets/über.py"], title="Größe prüfen 😀",
                              recommendation=advice)])  # fmt: skip
    built = load(workspace, store)
    again = load(workspace, store)
    assert (built.from_cache, again.from_cache) == (False, True)
    assert again.index.state()[1] == built.index.state()[1]
    (found,) = again.index.match(Signals(("src/widgets/über.py",)))
    assert (found.lesson.id, found.lesson.title) == (lesson_id(8), "Größe prüfen 😀")
    assert found.lesson.recommendation == advice
    titles = again.index.state()[1][2]
    assert list(titles) == [card.title for card in built.index._cards]


def _damaged_column(path: Path, column: int, damage: Callable[[object], object]) -> None:
    entry = list(marshal.loads(path.read_bytes()))
    state = list(entry[5])
    columns = list(state[1])
    columns[column] = damage(columns[column])
    state[1] = tuple(columns)
    entry[5] = tuple(state)
    path.write_bytes(marshal.dumps(tuple(entry)))


@pytest.mark.parametrize(
    ("column", "damage"),
    [
        (2, lambda packed: (packed[0], b"")),  # no end for any card
        (2, lambda packed: (packed[0][:-1], packed[1])),  # the last end past the text
        (3, lambda packed: (packed[0], packed[1][:-1])),  # a torn end
        (3, lambda packed: (packed[0], "not bytes")),
        (0, lambda packed: (*packed, "more")),  # not (text, ends)
        (1, list),  # the revisions, not a tuple
    ],
    ids=["no ends", "ends past the text", "torn end", "ends not bytes", "not a pair",
         "revisions"],
)  # fmt: skip
def test_a_cache_file_whose_card_columns_do_not_hold_is_rebuilt(
    setup: tuple[Path, Path], column: int, damage: Callable[[Any], object]
) -> None:
    workspace, store = setup
    path = Path(load(workspace, store).path)
    _damaged_column(path, column, damage)
    rebuilt = load(workspace, store)
    assert (rebuilt.from_cache, matched(rebuilt)) == (False, [lesson_id(1)])
    assert load(workspace, store).from_cache


def _ends(packed: tuple[str, bytes], change: Callable[[list[int]], list[int]]) -> tuple[str, bytes]:
    """A packed text column with ``change`` made to where its strings end."""
    text, ends = packed
    size = memoryview(ends).cast("I").itemsize
    changed = change(list(memoryview(ends).cast("I")))
    return text, b"".join(end.to_bytes(size, sys.byteorder) for end in changed)


# Ends that no longer part the text in order; the last one still matches the text's length,
# which is all that loading the file checks.
DAMAGED_ENDS = [
    lambda ends: [*reversed(ends[:-1]), ends[-1]],  # going back
    lambda ends: [ends[-1] + 1_000] * (len(ends) - 1) + ends[-1:],  # past the text
    lambda ends: [ends[-1], *ends[1:]],  # the first card's end on the last one's
    lambda ends: [ends[0], 0, *ends[2:]],  # the second card's end before its start
]
DAMAGED_IDS = ["going back", "past the text", "first end too far", "second end too short"]


@pytest.mark.parametrize("change", DAMAGED_ENDS, ids=DAMAGED_IDS)
@pytest.mark.parametrize("column", [0, 2, 3], ids=["ids", "titles", "recommendations"])
def test_a_card_is_never_sliced_from_damaged_ends(
    setup: tuple[Path, Path], column: int, change: Callable[[list[int]], list[int]]
) -> None:
    """The first card (the one a Read of config.py matches) is refused, never served with its
    neighbours' text or none; the fallback then drops the file and the next call rebuilds it."""
    workspace, store = setup
    built = load(workspace, store)
    (card,) = built.index.match(CONFIG)
    assert built.index._cards.columns[0][0] == card.lesson.id  # the damage reaches this card
    path = Path(built.path)
    _damaged_column(path, column, lambda packed: _ends(packed, change))
    cached = load(workspace, store)
    assert cached.from_cache
    with pytest.raises(ValueError, match="damaged text column"):
        cached.index.match(CONFIG)
    document = json.loads(payload_in("claude/read.json", workspace))
    with pytest.raises(ValueError, match="damaged text column"):
        answer_from_store("claude", document, store=str(store), workspace=str(workspace))
    assert not path.exists()
    answer = answer_from_store("claude", document, store=str(store), workspace=str(workspace))
    assert answer is not None
    assert card.lesson.title.encode() in answer[0]


@pytest.mark.parametrize("change", DAMAGED_ENDS, ids=DAMAGED_IDS)
def test_damaged_ends_are_not_written_again_when_only_the_key_sources_moved(
    setup: tuple[Path, Path], change: Callable[[list[int]], list[int]]
) -> None:
    """A call that re-derives the repository key reuses the file's index only when its text
    columns are whole; else it rebuilds from the rows rather than keep the damage under a new
    key (every later call would fail on it)."""
    workspace, store = setup
    path = Path(load(workspace, store).path)
    _damaged_column(path, 2, lambda packed: _ends(packed, change))
    config = workspace / ".git" / "config"
    config.write_text(config.read_text() + "\n")  # the key's sources moved, the key is the same
    again = load(workspace, store)
    assert (again.from_cache, again.repository) == (False, REPOSITORY)
    (card,) = again.index.match(CONFIG)
    assert card.lesson.title == "Config loads lazily"
    cached = load(workspace, store)
    assert cached.from_cache
    assert [match.lesson.title for match in cached.index.match(CONFIG)] == ["Config loads lazily"]


def test_a_text_column_indexes_as_a_tuple_does(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    load(workspace, store)
    restored = load(workspace, store).index._cards.columns[2]
    titles = tuple(restored)
    count = len(titles)
    for position in range(-count, count):
        assert restored[position] == titles[position]
    for position in (count, -count - 1, -2 * count):
        with pytest.raises(IndexError):
            restored[position]


def test_a_cached_index_that_fails_is_discarded(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    path = Path(load(workspace, store).path)
    entry = list(marshal.loads(path.read_bytes()))
    state = list(entry[5])
    state[2] = {"src/widgets/config.py": [999]}  # a position no card holds
    entry[5] = tuple(state)
    path.write_bytes(marshal.dumps(tuple(entry)))
    document = json.loads(payload_in("claude/read.json", workspace))
    with pytest.raises(IndexError):
        answer_from_store("claude", document, store=str(store), workspace=str(workspace))
    assert not path.exists()
    answer = answer_from_store("claude", document, store=str(store), workspace=str(workspace))
    assert answer is not None
    assert lesson_id(1).encode() in answer[0]


def test_a_new_origin_remote_is_seen_by_the_next_call(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    assert load(workspace, store).repository == REPOSITORY
    subprocess.run(["git", "-C", str(workspace), "remote", "set-url", "origin",
                    "https://github.com/acme/gadgets.git"], check=True)  # fmt: skip
    moved = load(workspace, store)
    assert (moved.from_cache, moved.repository) == (False, "forge:github.com/acme/gadgets")
    assert matched(moved) == []


def test_a_new_checkout_between_workspace_and_repository_is_seen(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    inner = workspace / "src" / "widgets"
    inner.mkdir(parents=True)
    assert load(inner, store).repository == REPOSITORY
    subprocess.run(["git", "init", "-q", str(workspace / "src")], check=True)
    assert load(inner, store).repository == local_repository_key(workspace / "src")


def test_each_store_and_workspace_has_its_own_cache_file(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    workspace, store = setup
    other = widgets_checkout(tmp_path / "other")
    paths = {load(workspace, store).path, load(other, store).path}
    assert len(paths) == 2
    assert load(workspace, store).from_cache
    assert load(other, store).from_cache
    real = os.path.realpath(workspace)
    assert index_cache.cache_path(str(store), real) == load(workspace, store).path


def test_the_cache_is_written_by_the_shared_private_file_writer(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, store = setup
    written: list[str] = []

    def record(path: str, data: bytes) -> None:
        written.append(path)
        write_private_bytes(path, data)

    monkeypatch.setattr(index_cache, "write_private_bytes", record)
    cached = load(workspace, store)
    assert written == [cached.path]
    assert load(workspace, store).from_cache


def test_a_private_bytes_file_is_0600_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    folder = tmp_path / "exposure"
    folder.mkdir(mode=0o700)
    path = folder / "x.index"
    stale = (
        folder / f".x.index.{os.getpid()}.{threading.get_ident()}.tmp"
    )  # what a crash of this pid would leave
    stale.write_bytes(b"old")
    stale.chmod(0o644)
    old = os.umask(0)
    try:
        write_private_bytes(path, b"\x00" * 300_000)
    finally:
        os.umask(old)
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == (b"\x00" * 300_000, 0o600)
    assert sorted(os.listdir(folder)) == ["x.index"]
    write_private_bytes(path, b"new")
    assert path.read_bytes() == b"new"


def test_a_private_bytes_file_is_not_written_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    path = tmp_path / "x.index"
    (tmp_path / f".x.index.{os.getpid()}.{threading.get_ident()}.tmp").symlink_to(target)
    with pytest.raises(OSError, match=r"symbolic links|Too many levels"):
        write_private_bytes(path, b"data")
    assert target.read_bytes() == b"keep"
    assert not path.exists()


# Loads the index in a fresh process, with the package version optionally changed first.
LOAD_PROBE = """
import sys
sys.path.insert(0, sys.argv[4])
import active_memory
if sys.argv[3]:
    active_memory.__version__ = sys.argv[3]
from active_memory.hooks.index_cache import load_index
print(load_index(sys.argv[1], sys.argv[2]).from_cache, "_sqlite3" in sys.modules)
"""


def load_in_a_new_process(
    workspace: Path, store: Path, version: str = "", *, opened: list[bool] | None = None
) -> bool:
    """Whether the index came from the cache; ``opened`` gets whether _sqlite3 was loaded."""
    source = str(Path(index_cache.__file__).parents[2])  # the src folder under test
    command = [sys.executable, "-I", "-S", "-c", LOAD_PROBE, str(store), str(workspace), version,
               source]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    from_cache, loaded = done.stdout.split()
    if opened is not None:
        opened.append(loaded == "True")
    return {"True": True, "False": False}[from_cache]


def test_a_cache_written_by_another_version_is_rebuilt(setup: tuple[Path, Path]) -> None:
    workspace, store = setup
    assert not load(workspace, store).from_cache
    assert load_in_a_new_process(workspace, store)  # the same code: reused
    assert not load_in_a_new_process(workspace, store, version="99.0.0")
    assert load_in_a_new_process(workspace, store, version="99.0.0")  # rebuilt for that one
    assert not load(workspace, store).from_cache  # and back


def test_the_format_follows_the_version_and_the_code_of_the_state() -> None:
    import active_memory
    from active_memory import limits
    from active_memory.recall import index
    from active_memory.store import rows

    assert active_memory.__version__ in index_cache.FORMAT
    expected = {index.__file__, limits.__file__, rows.__file__, index_cache.__file__}
    assert set(index_cache.LAYOUT_SOURCES) == expected
    assert index_cache.layout_stamp(index_cache.LAYOUT_SOURCES) in index_cache.FORMAT


def test_the_layout_stamp_changes_when_a_source_changes(tmp_path: Path) -> None:
    source = tmp_path / "index.py"
    source.write_text("STATE = 1\n")
    os.utime(source, ns=(1_000_000_000, 1_000_000_000))
    paths = (str(source), str(tmp_path / "missing.py"), None)
    before = index_cache.layout_stamp(paths)
    assert before == index_cache.layout_stamp(paths)
    assert before[1:] == (None, None)
    source.write_text("STATE = 2\n")  # same size
    assert index_cache.layout_stamp(paths) != before


def settle(cached: CachedIndex) -> None:
    """Date the cache file's record of the store's files as taken long after their last change,
    as a later call would have taken it."""
    entry = list(marshal.loads(Path(cached.path).read_bytes()))
    statuses, taken = entry[6]
    entry[6] = (statuses, taken + 2 * index_cache.SETTLED_NS)
    write_private_bytes(cached.path, marshal.dumps(tuple(entry)))


def refuse_to_open(monkeypatch: pytest.MonkeyPatch) -> None:
    def opened(*_: object, **__: object) -> None:
        raise AssertionError("the store was opened")

    monkeypatch.setattr(store_rows, "StoreRows", opened)


def test_a_settled_record_of_the_store_files_serves_without_opening_the_store(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, store = setup
    settle(load(workspace, store))
    refuse_to_open(monkeypatch)
    again = load(workspace, store)
    assert (again.from_cache, matched(again)) == (True, [lesson_id(1)])


def test_a_record_taken_soon_after_a_change_vouches_for_nothing(
    setup: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, store = setup
    first = load(workspace, store)  # the store was written just now: not settled
    opened: list[str] = []
    real = store_rows.StoreRows

    def counting(path: str) -> store_rows.StoreRows:
        opened.append(path)
        return real(path)

    monkeypatch.setattr(store_rows, "StoreRows", counting)
    written = os.stat(first.path).st_mtime_ns
    again = load(workspace, store)
    assert (again.from_cache, opened) == (True, [str(store)])  # the stamp was read
    assert os.stat(first.path).st_mtime_ns == written  # and not recorded while unsettled
    monkeypatch.setattr(index_cache, "SETTLED_NS", -1)  # as if the change were long ago
    load(workspace, store)  # reads the stamp once more and records the settled status
    refuse_to_open(monkeypatch)
    assert load(workspace, store).from_cache


def test_a_write_after_a_settled_record_makes_the_next_call_read_the_store(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    settle(load(workspace, store))
    seed_store(store, [lesson(7, files=["src/widgets/config.py"])])
    after = load(workspace, store)
    assert (after.from_cache, matched(after)) == (False, [lesson_id(1), lesson_id(7)])


def test_a_store_path_turned_into_a_symlink_is_opened_and_refused(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    settle(load(workspace, store))
    moved = store.with_name("moved.sqlite3")
    store.rename(moved)
    store.symlink_to(moved)  # the same file, its status as recorded, but through a link
    with pytest.raises(StoreUnavailable, match="symbolic link"):
        load(workspace, store)


def test_a_call_served_by_a_settled_record_does_not_load_sqlite(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    opened: list[bool] = []
    assert not load_in_a_new_process(workspace, store, opened=opened)
    settle(load(workspace, store))
    assert load_in_a_new_process(workspace, store, opened=opened)
    assert opened == [True, False]


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_a_purge_removes_the_fallbacks_cached_indexes_beside_the_store(
    tmp_path: Path, output: list[str]
) -> None:
    """Purge is for a lesson that leaked a secret: the index the hook fallback cached beside
    the store while the lesson was live holds its text, and no later call of that workspace may
    ever come to replace it."""
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    leaked = "Rotate the purple-walrus-4417 credential before editing src/widgets/config.py."
    seed_store(store, [lesson(1, files=["src/widgets/config.py"], recommendation=leaked)])
    assert matched(load(workspace, store)) == [lesson_id(1)]
    with SqliteStore(store) as backend:
        backend.publish(Publication(run_id="run-2", mutations=(
            Mutation(op="retire", id=lesson_id(1), expected_revision=1),)))  # fmt: skip

    def holding() -> list[str]:
        return sorted(
            str(path.relative_to(store.parent))
            for path in store.parent.rglob("*")
            if path.is_file() and leaked.encode() in path.read_bytes()
        )

    cached = index_cache.cache_path(str(store), os.path.realpath(workspace))
    assert str(Path(cached).relative_to(store.parent)) in holding()
    purged = run_cli(["lessons", "purge", lesson_id(1), "--force", "--store", str(store), *output])
    assert purged.exit_code == 0, purged.stderr
    assert holding() == []
    assert matched(load(workspace, store)) == []  # the next call builds it again, without it
