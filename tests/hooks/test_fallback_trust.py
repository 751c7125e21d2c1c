"""The fallback's ``exposure`` folder is trusted only when it is this user's alone.

The store may sit in a folder others can write (a shared ``1777`` directory): another user could
then create ``exposure/`` first, fill it with ledgers that suppress cards, a cached index that
injects its own, or links that make pruning delete elsewhere. A folder that is not a real
directory of this user, mode 0700, is ignored: the call is answered as in a fresh conversation,
nothing is read, written or pruned there. Files in it are read only when they are this user's
regular files, mode 0600, opened without following a link.

Tests run as root; "another user" is ``nobody``, made real by ``chown`` or by a child process
that switches to that uid.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.errors import RecallError
from active_memory.hooks.fallback import answer_from_store, exposure_file, prune_exposures
from active_memory.hooks.index_cache import cache_path, load_index
from active_memory.hooks.private_dir import private_dir
from hooks.test_fallback import ask
from recall.kit import lesson_id, payload_in, seed_store, widgets_checkout, widgets_lessons

NOBODY = 65534
DAY = 24 * 3600
CONVERSATION = "3f2b9c1e-7a44-4a51-9d0e-1c2b3d4e5f60"  # the session id of claude/read.json
as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="needs root, to give files to another user (chown, setresuid)",
)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    workspace = widgets_checkout(tmp_path / "widgets")
    store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
    seed_store(store, widgets_lessons())
    return workspace, store


def suppressing_ledger(store: Path, workspace: Path, *, owner: int, mode: int) -> Path:
    """``exposure/`` holding a ledger that says lesson 1 was delivered in the conversation."""
    ledger = Path(exposure_file(store, str(workspace), CONVERSATION))
    ledger.parent.mkdir(exist_ok=True)
    ledger.write_text(f"{lesson_id(1)}@1\n", encoding="utf-8")
    ledger.chmod(mode)
    os.chown(ledger, owner, owner)
    return ledger


def listing(folder: Path) -> dict[str, int]:
    return {entry.name: entry.stat(follow_symlinks=False).st_mtime_ns
            for entry in os.scandir(folder)}  # fmt: skip


def delivered(workspace: Path, store: Path) -> bool:
    answer = ask(workspace, store, payload_in("claude/read.json", workspace))
    return lesson_id(1) in json.dumps(answer)


def test_an_own_ledger_suppresses_the_card(setup: tuple[Path, Path]) -> None:
    """The control: the same ledger, this user's own in a private folder, does suppress."""
    workspace, store = setup
    private_dir(store.parent / "exposure")
    suppressing_ledger(store, workspace, owner=os.geteuid(), mode=0o600)
    assert not delivered(workspace, store)


@as_root
@pytest.mark.parametrize("mode", [0o777, 0o700], ids=oct)
def test_an_exposure_folder_of_another_user_is_ignored(setup: tuple[Path, Path], mode: int) -> None:
    workspace, store = setup
    folder = store.parent / "exposure"
    folder.mkdir()
    ledger = suppressing_ledger(store, workspace, owner=NOBODY, mode=0o666)
    stale = folder / "victim.keys"  # pruning must not run in a folder that is not ours
    stale.write_text("x\n")
    old = time.time() - 30 * DAY
    os.utime(stale, (old, old))
    os.chown(stale, NOBODY, NOBODY)
    folder.chmod(mode)
    os.chown(folder, NOBODY, NOBODY)
    before = listing(folder)
    for _ in range(2):  # answered as a fresh conversation every time: nothing is remembered
        assert delivered(workspace, store)
    assert listing(folder) == before  # no cache, no ledger, no prune marker written, none removed
    assert ledger.read_text() == f"{lesson_id(1)}@1\n"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o705], ids=oct)
def test_an_own_exposure_folder_others_can_use_is_ignored(
    setup: tuple[Path, Path], mode: int
) -> None:
    workspace, store = setup
    folder = store.parent / "exposure"
    folder.mkdir()
    suppressing_ledger(store, workspace, owner=os.geteuid(), mode=0o600)
    folder.chmod(mode)
    before = listing(folder)
    assert delivered(workspace, store)
    assert listing(folder) == before


def test_an_exposure_folder_that_is_a_symlink_is_ignored(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """Even to a private folder of this user's: pruning there would delete its files."""
    workspace, store = setup
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (store.parent / "exposure").symlink_to(elsewhere)
    suppressing_ledger(store, workspace, owner=os.geteuid(), mode=0o600)
    precious = elsewhere / "precious.index"
    precious.write_text("x")
    old = time.time() - 30 * DAY
    os.utime(precious, (old, old))
    before = listing(elsewhere)
    assert delivered(workspace, store)
    assert listing(elsewhere) == before


@as_root
@pytest.mark.parametrize(
    ("owner", "mode"), [(NOBODY, 0o600), (0, 0o644), (0, 0o660)], ids=["theirs", "0644", "0660"]
)
def test_a_ledger_that_is_not_private_to_this_user_is_ignored(
    setup: tuple[Path, Path], owner: int, mode: int
) -> None:
    workspace, store = setup
    private_dir(store.parent / "exposure")
    suppressing_ledger(store, workspace, owner=owner, mode=mode)
    assert delivered(workspace, store)


def test_a_ledger_that_is_a_symlink_is_ignored(setup: tuple[Path, Path], tmp_path: Path) -> None:
    workspace, store = setup
    private_dir(store.parent / "exposure")
    target = tmp_path / "keys.txt"
    target.write_text(f"{lesson_id(1)}@1\n")
    target.chmod(0o600)
    Path(exposure_file(store, str(workspace), CONVERSATION)).symlink_to(target)
    assert delivered(workspace, store)
    assert target.read_text() == f"{lesson_id(1)}@1\n"  # not appended to through the link


@as_root
def test_a_cached_index_in_a_folder_of_another_user_is_neither_read_nor_written(
    setup: tuple[Path, Path],
) -> None:
    workspace, store = setup
    first = load_index(str(store), str(workspace))
    folder = Path(first.path).parent
    os.chown(folder, NOBODY, NOBODY)  # the cache file itself stays this user's, mode 0600
    written = os.stat(first.path).st_mtime_ns
    again = load_index(str(store), str(workspace))
    assert not again.from_cache
    assert os.stat(first.path).st_mtime_ns == written
    assert [match.lesson.id for match in again.index.match(_config_signals())] == [lesson_id(1)]


def _config_signals() -> object:
    from active_memory.recall.signals import Signals

    return Signals(("src/widgets/config.py",))


def test_the_cache_is_not_written_through_a_symlinked_folder(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    workspace, store = setup
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (store.parent / "exposure").symlink_to(elsewhere)
    cached = load_index(str(store), str(workspace))
    assert not cached.from_cache
    assert list(elsewhere.iterdir()) == []
    assert cached.path == cache_path(str(store), os.path.realpath(workspace))


def test_private_dir_refuses_a_symlink_even_to_a_private_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises((OSError, RecallError)):
        private_dir(link)
    private_dir(real)  # the folder itself is fine
    fresh = tmp_path / "fresh"
    private_dir(fresh)
    assert stat.S_IMODE(os.lstat(fresh).st_mode) == 0o700


@as_root
def test_private_dir_refuses_a_folder_of_another_user(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, NOBODY, NOBODY)
    with pytest.raises(RecallError, match="only you"):
        private_dir(folder)


@as_root
def test_pruning_skips_a_folder_that_is_not_ours(tmp_path: Path) -> None:
    folder = tmp_path / "exposure"
    folder.mkdir(mode=0o700)
    old = time.time() - 30 * DAY
    for name in ("a.keys", "b.index", "c.tmp"):
        (folder / name).write_text("x")
        os.utime(folder / name, (old, old))
    os.chown(folder, NOBODY, NOBODY)
    assert prune_exposures(folder) == 0
    assert sorted(path.name for path in folder.iterdir()) == ["a.keys", "b.index", "c.tmp"]
    link = tmp_path / "link"
    os.chown(folder, 0, 0)
    link.symlink_to(folder)
    assert prune_exposures(link) == 0
    assert len(list(folder.iterdir())) == 3
    assert prune_exposures(folder) == 3  # the real folder, ours and private: pruned


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A world-writable sticky folder (like /tmp) that ``nobody`` can reach."""
    folder = Path(tempfile.mkdtemp(prefix="am-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


# Run as another user: create `exposure/` (0777) and a ledger for the victim's conversation.
PLANT = """
import os, sys
os.setgroups([])
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
folder, ledger, key = sys.argv[1:]
os.mkdir(folder)
os.chmod(folder, 0o777)
with open(ledger, "w") as handle:
    handle.write(key + "\\n")
os.chmod(ledger, 0o666)
"""


@as_root
def test_another_user_cannot_suppress_a_card_from_a_shared_folder(
    shared_folder: Path, tmp_path: Path
) -> None:
    """The audit's case, with a real second user: the victim still gets the card."""
    workspace = widgets_checkout(tmp_path / "widgets")
    seeded = tmp_path / "seed" / "lessons.sqlite3"
    seed_store(seeded, widgets_lessons())
    store = shared_folder / "lessons.sqlite3"
    store.write_bytes(seeded.read_bytes())
    store.chmod(0o600)
    ledger = exposure_file(store, str(workspace), CONVERSATION)
    subprocess.run([sys.executable, "-c", PLANT, os.path.dirname(ledger), ledger,
                    f"{lesson_id(1)}@1"], check=True, timeout=60)  # fmt: skip
    assert os.stat(os.path.dirname(ledger)).st_uid == NOBODY
    assert delivered(workspace, store)
    document = json.loads(payload_in("claude/read.json", workspace))
    answer = answer_from_store("claude", document, store=str(store), workspace=str(workspace))
    assert answer is not None
    body, commit = answer
    assert lesson_id(1).encode() in body
    commit()  # nothing recorded in their folder, and no error
    assert sorted(os.listdir(os.path.dirname(ledger))) == [os.path.basename(ledger)]
