"""One inspection asks git few times: the combined reading must say what the separate commands
said (the state, and the exact fingerprint publication recomputes) on odd checkouts."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from active_memory import provenance
from active_memory.provenance import fingerprint, inspect_and_fingerprint, inspect_checkout

_IDENTITY = ("-c", "user.name=Test Author", "-c", "user.email=author@example.invalid")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *_IDENTITY, *args], cwd=root, capture_output=True, check=True, text=True
    )
    return done.stdout.strip()


def _committed(root: Path) -> Path:
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (root / "app.py").write_text("print(1)\n", encoding="utf-8")
    (root / "# branch.head x").write_text("a file named like a status header\n", encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "initial")
    return root


def _clean(root: Path) -> None:
    """Leave the committed checkout as it is."""


def _edited(root: Path) -> None:
    (root / "app.py").write_text("print(2)\n", encoding="utf-8")
    (root / "new.py").write_text("x = 1\n", encoding="utf-8")
    (root / "debug.log").write_text("ignored\n", encoding="utf-8")


def _renamed_header_lookalike(root: Path) -> None:
    # A staged rename prints its original path as its own -z token after the entry: here a name
    # starting "# ", which must not be read as a branch header.
    _git(root, "mv", "# branch.head x", "renamed.txt")


def _detached(root: Path) -> None:
    _git(root, "checkout", "-q", "--detach")


def _branch_named_detached(root: Path) -> None:
    _git(root, "checkout", "-q", "-b", "(detached)")


def _head_file_and_odd_remotes(root: Path) -> None:
    (root / "HEAD").write_text("a work tree file named HEAD\n", encoding="utf-8")
    _git(root, "add", "HEAD")
    _git(root, "commit", "-q", "-m", "HEAD file")
    _git(root, "config", "remote.a b.url", "https://example.invalid/a b.git")
    _git(root, "config", "remote.a b.promisor", "true")
    _git(root, "config", "remote.origin.url", "https://example.invalid/x\n y.promisor true")


def _head_is_a_tag_object(root: Path) -> None:
    _git(root, "tag", "-a", "-m", "annotated", "v1")
    # git refuses this through update-ref; a hand-edited ref file still does it.
    (root / ".git" / "refs" / "heads" / "main").write_text(_git(root, "rev-parse", "v1") + "\n")


def _stash_shown(root: Path) -> None:
    # status.showStash makes every porcelain v2 status print "# stash 1" (with --branch too,
    # after the branch headers): fingerprint's status holds it, so the combined one must.
    _git(root, "config", "status.showStash", "true")
    (root / "app.py").write_text("print(3)\n", encoding="utf-8")
    _git(root, "stash", "-q")


_CHECKOUTS: dict[str, Callable[[Path], None]] = {
    "clean": _clean,
    "edited": _edited,
    "renamed_header_lookalike": _renamed_header_lookalike,
    "detached": _detached,
    "branch_named_detached": _branch_named_detached,
    "head_file_and_odd_remotes": _head_file_and_odd_remotes,
    "head_is_a_tag_object": _head_is_a_tag_object,
    "stash_shown": _stash_shown,
}


@pytest.mark.parametrize("shape", list(_CHECKOUTS))
def test_the_combined_reading_gives_the_separate_state_and_fingerprint(
    tmp_path: Path, shape: str
) -> None:
    root = _committed(tmp_path / "repo")
    _CHECKOUTS[shape](root)
    state, combined = inspect_and_fingerprint(root)
    assert state == inspect_checkout(root)
    assert combined == fingerprint(root)  # what verify_fingerprint recomputes at publication
    symbolic = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=root, check=False)
    assert state.detached == (symbolic.returncode != 0)
    assert state.detached == (shape == "detached")
    head = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", "HEAD^{commit}"], cwd=root, capture_output=True
    )
    assert state.head == (head.stdout.decode().strip() or None)
    assert state.partial == (shape == "head_file_and_odd_remotes")


def test_a_stash_that_status_shows_leaves_a_clean_checkout_clean(tmp_path: Path) -> None:
    root = _committed(tmp_path / "repo")
    _stash_shown(root)
    state, combined = inspect_and_fingerprint(root, dirty=False)
    assert state.clean  # a stash is no change of the work tree, as porcelain v1 said
    assert combined == fingerprint(root)


def test_an_unborn_branch_is_fingerprinted_as_fingerprint_does(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "new.py").write_text("x = 1\n", encoding="utf-8")
    state, combined = inspect_and_fingerprint(root)
    assert state.head is None
    assert not state.clean
    assert combined == fingerprint(root)


@pytest.mark.parametrize(
    ("key", "value", "partial"),
    [
        ("extensions.partialClone", "origin", True),
        ("remote.origin.promisor", "TRUE", True),
        ("remote.origin.promisor", "false", False),
        ("remote.origin.url", "https://example.invalid/a.promisor true", False),
    ],
)
def test_partial_clones_are_told_from_one_config_read(
    tmp_path: Path, key: str, value: str, partial: bool
) -> None:
    root = _committed(tmp_path / "repo")
    _git(root, "config", key, value)
    assert inspect_checkout(root).partial is partial
    assert inspect_and_fingerprint(root)[1] == fingerprint(root)


def _count_git(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    calls: list[tuple[str, ...]] = []
    real = provenance._git

    def counting(repo: object, *args: str) -> tuple[int, bytes]:
        calls.append(args)
        return real(repo, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(provenance, "_git", counting)
    return calls


def test_one_inspection_with_its_fingerprint_runs_four_git_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each git process costs ~10-20 ms of CPU; inspection and fingerprint used to run ten."""
    root = _committed(tmp_path / "repo")
    calls = _count_git(monkeypatch)
    state, combined = inspect_and_fingerprint(root)
    assert state.clean
    assert combined is not None
    assert [args[0] for args in calls] == ["rev-parse", "status", "ls-files", "config"]


def test_a_dirty_checkout_is_not_hashed_when_only_a_clean_one_is_wanted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _committed(tmp_path / "repo")
    _edited(root)
    hashed: list[Path] = []
    monkeypatch.setattr(provenance, "checkout_digest", lambda root, *_: hashed.append(root))
    state, combined = inspect_and_fingerprint(root, dirty=False)
    assert not state.clean
    assert combined is None
    assert hashed == []


def test_an_ancestry_question_runs_three_git_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shallowness and both commits' presence come from one rev-parse (it used to take three)."""
    root = _committed(tmp_path / "repo")
    first = _git(root, "rev-parse", "HEAD")
    _git(root, "commit", "-q", "--allow-empty", "-m", "second")
    second = _git(root, "rev-parse", "HEAD")
    calls = _count_git(monkeypatch)
    assert provenance.is_ancestor(root, first, second) is True
    assert [args[0] for args in calls] == ["rev-parse", "config", "merge-base"]
    assert provenance.is_ancestor(root, second, first) is False
    calls.clear()
    assert provenance.is_ancestor(root, "0" * 40, second) is None  # missing: no merge-base
    assert [args[0] for args in calls] == ["rev-parse", "config"]
