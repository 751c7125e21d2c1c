"""Checkout inspection on real repositories built with GitPython (local only, no network)."""

from __future__ import annotations

import os
from pathlib import Path

import git
import pytest

from active_memory.errors import ProvenanceError
from active_memory.provenance import (
    CheckoutState,
    GitCheckoutVerifier,
    destructive_changes_allowed,
    fingerprint,
    inspect_checkout,
    is_ancestor,
    verify_fingerprint,
)
from active_memory.repository import local_repository_key, repository_key

ACTOR = git.Actor("Test Author", "author@example.invalid")


def _write(root: Path, relative: str, text: str = "x\n") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _commit(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    repo.index.commit(message, author=ACTOR, committer=ACTOR)
    return str(repo.head.commit.hexsha)


def _repo(root: Path) -> tuple[git.Repo, str]:
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", ACTOR.name)
        config.set_value("user", "email", ACTOR.email)
    _write(root, ".gitignore", "*.log\nbuild/\n")
    _write(root, "src/app.py", "def main():\n    return 0\n")
    return repo, _commit(repo, "initial")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[git.Repo, str]:
    return _repo(tmp_path / "repo")


def _root(repo: git.Repo) -> Path:
    return Path(repo.working_tree_dir or "")


def test_clean_repository_without_remote(repo: tuple[git.Repo, str]) -> None:
    handle, head = repo
    state = inspect_checkout(_root(handle))
    assert state == CheckoutState(
        path=_root(handle),
        is_git=True,
        head=head,
        clean=True,
        repository=local_repository_key(_root(handle)),
    )
    assert state.source_commit == head


def test_repository_key_comes_from_origin_without_credentials(repo: tuple[git.Repo, str]) -> None:
    handle, _ = repo
    handle.create_remote("origin", "https://user:fake-token@github.com/acme/shop.git")
    assert inspect_checkout(_root(handle)).repository == "forge:github.com/acme/shop"


@pytest.mark.parametrize(
    ("relative", "clean"),
    [("src/app.py", False), ("src/new.py", False), ("debug.log", True), ("build/x.py", True)],
)
def test_tracked_edits_and_unignored_files_make_the_checkout_dirty(
    repo: tuple[git.Repo, str], relative: str, clean: bool
) -> None:
    handle, _ = repo
    _write(_root(handle), relative, "changed\n")
    state = inspect_checkout(_root(handle))
    assert state.clean is clean
    assert state.source_commit == (state.head if clean else None)


def test_non_git_folder_is_reported_and_defers_everything(tmp_path: Path) -> None:
    _write(tmp_path, "notes.md")
    state = inspect_checkout(tmp_path)
    assert not state.is_git
    assert state.head is None
    assert state.repository == local_repository_key(tmp_path)
    assert destructive_changes_allowed(state, "a" * 40).reason == "not_git"
    with pytest.raises(ProvenanceError, match="not the root of a git work tree"):
        fingerprint(tmp_path)
    with pytest.raises(ProvenanceError, match="not the root of a git work tree"):
        GitCheckoutVerifier.open(tmp_path)
    assert is_ancestor(tmp_path, "a" * 40, "b" * 40) is None


def test_subfolder_of_a_repository_is_not_a_checkout_root(repo: tuple[git.Repo, str]) -> None:
    assert not inspect_checkout(_root(repo[0]) / "src").is_git


def _layouts(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Folders to key, each with the key it must have: every git layout a hook may run in."""
    plain, _ = _repo(tmp_path / "plain")
    remote, _ = _repo(tmp_path / "remote")
    remote.create_remote("origin", "git@github.com:acme/shop.git")
    plain.git.worktree("add", str(tmp_path / "linked"))
    remote.git.worktree("add", str(tmp_path / "linked-remote"))
    library, _ = _repo(tmp_path / "library")
    remote.git.execute(
        ["git", "-c", "protocol.file.allow=always", "submodule", "add",
         str(_root(library)), "vendor/library"]
    )  # fmt: skip
    submodule = tmp_path / "remote" / "vendor" / "library"
    # Its origin is set in the superproject's .git/modules, reached through the .git file.
    git.Repo(submodule).remote("origin").set_url("https://github.com/acme/library.git")
    (tmp_path / "loose" / "sub").mkdir(parents=True)
    forge = "forge:github.com/acme/shop"
    return {
        "root, no remote": (tmp_path / "plain", local_repository_key(tmp_path / "plain")),
        "subdirectory, no remote": (
            tmp_path / "plain" / "src",
            local_repository_key(tmp_path / "plain"),
        ),
        "root, remote": (tmp_path / "remote", forge),
        "subdirectory, remote": (tmp_path / "remote" / "src", forge),
        "worktree, no remote": (tmp_path / "linked", local_repository_key(tmp_path / "linked")),
        "worktree subdirectory": (
            tmp_path / "linked" / "src",
            local_repository_key(tmp_path / "linked"),
        ),
        "worktree, remote": (tmp_path / "linked-remote" / "src", forge),
        "submodule": (submodule, "forge:github.com/acme/library"),
        "submodule subdirectory": (submodule / "src", "forge:github.com/acme/library"),
        "not git": (tmp_path / "loose", local_repository_key(tmp_path / "loose")),
        "not git, subdirectory": (
            tmp_path / "loose" / "sub",
            local_repository_key(tmp_path / "loose" / "sub"),
        ),
    }


def test_checkout_inspection_and_recall_derive_the_same_repository_key(tmp_path: Path) -> None:
    for name, (folder, expected) in _layouts(tmp_path).items():
        assert (name, inspect_checkout(folder).repository) == (name, expected)
        assert (name, repository_key(folder)) == (name, expected)


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProvenanceError, match="is not a directory"):
        inspect_checkout(tmp_path / "absent")


def test_unborn_branch_has_no_head(tmp_path: Path) -> None:
    git.Repo.init(tmp_path / "empty")
    state = inspect_checkout(tmp_path / "empty")
    assert state.is_git
    assert state.head is None
    assert not state.clean
    assert destructive_changes_allowed(state, "a" * 40).reason == "no_head"


def test_ancestry_forward_backward_and_missing(repo: tuple[git.Repo, str]) -> None:
    handle, first = repo
    root = _root(handle)
    _write(root, "src/two.py")
    second = _commit(handle, "second")
    assert is_ancestor(root, first, second) is True
    assert is_ancestor(root, second, first) is False
    assert is_ancestor(root, first, first) is True
    assert is_ancestor(root, "0" * 40, second) is None
    assert is_ancestor(root, "not a commit", second) is None
    assert destructive_changes_allowed(inspect_checkout(root), first).allowed


def test_divergent_history_is_not_ancestry(repo: tuple[git.Repo, str]) -> None:
    handle, _ = repo
    root = _root(handle)
    handle.git.checkout("-b", "side")
    _write(root, "side.md")
    side = _commit(handle, "side")
    handle.git.checkout("-")
    _write(root, "main.md")
    main = _commit(handle, "main")
    assert is_ancestor(root, side, main) is False
    assert is_ancestor(root, main, side) is False
    verdict = destructive_changes_allowed(inspect_checkout(root), side)
    assert (verdict.allowed, verdict.reason) == (False, "divergent")


def test_squash_merged_history_defers(repo: tuple[git.Repo, str]) -> None:
    handle, _ = repo
    root = _root(handle)
    handle.git.checkout("-b", "feature")
    _write(root, "feature.md", "one\n")
    recorded = _commit(handle, "feature one")
    _write(root, "feature.md", "two\n")
    _commit(handle, "feature two")
    handle.git.checkout("-")
    handle.git.merge("--squash", "feature")
    _commit(handle, "squashed feature")
    assert (root / "feature.md").read_text() == "two\n"
    assert destructive_changes_allowed(inspect_checkout(root), recorded).reason == "divergent"


def test_detached_head_is_reported_and_still_judged_by_ancestry(
    repo: tuple[git.Repo, str],
) -> None:
    handle, first = repo
    root = _root(handle)
    _write(root, "src/two.py")
    second = _commit(handle, "second")
    handle.git.checkout(second)
    state = inspect_checkout(root)
    assert state.detached
    assert state.head == second
    assert destructive_changes_allowed(state, first).allowed


def test_unknown_legacy_provenance_defers(repo: tuple[git.Repo, str]) -> None:
    verdict = destructive_changes_allowed(inspect_checkout(_root(repo[0])), None)
    assert (verdict.allowed, verdict.reason) == (False, "unknown_provenance")


def test_dirty_checkout_defers(repo: tuple[git.Repo, str]) -> None:
    handle, head = repo
    _write(_root(handle), "src/app.py", "edited\n")
    assert destructive_changes_allowed(inspect_checkout(_root(handle)), head).reason == "dirty"


def test_shallow_clone_from_a_local_file_url(repo: tuple[git.Repo, str], tmp_path: Path) -> None:
    source, first = repo
    _write(_root(source), "src/two.py")
    second = _commit(source, "second")
    clone = git.Repo.clone_from(f"file://{_root(source)}", tmp_path / "shallow", depth=1)
    state = inspect_checkout(_root(clone))
    assert state.shallow
    assert state.head == second
    assert is_ancestor(_root(clone), first, second) is None
    assert destructive_changes_allowed(state, first).reason == "shallow"


def test_partial_clone_is_filtered(repo: tuple[git.Repo, str], tmp_path: Path) -> None:
    source, head = repo
    source.git.config("uploadpack.allowFilter", "true")
    clone = git.Repo.clone_from(
        f"file://{_root(source)}", tmp_path / "partial", multi_options=["--filter=blob:none"]
    )
    state = inspect_checkout(_root(clone))
    assert state.partial
    assert not state.shallow
    assert is_ancestor(_root(clone), head, head) is None
    assert destructive_changes_allowed(state, head).reason == "filtered"


def test_submodule_checkout_defers(repo: tuple[git.Repo, str], tmp_path: Path) -> None:
    handle, head = repo
    library, _ = _repo(tmp_path / "library")
    handle.git.execute(
        ["git", "-c", "protocol.file.allow=always", "submodule", "add",
         str(_root(library)), "vendor/library"]
    )  # fmt: skip
    _commit(handle, "add submodule")
    state = inspect_checkout(_root(handle))
    assert state.has_submodules
    assert state.clean
    assert destructive_changes_allowed(state, head).reason == "submodules"


# --- fingerprint --------------------------------------------------------------------------


def test_fingerprint_is_stable_and_ignores_ignored_files(repo: tuple[git.Repo, str]) -> None:
    root = _root(repo[0])
    before = fingerprint(root)
    assert fingerprint(root) == before
    _write(root, "debug.log", "noise\n")
    _write(root, "build/out.py", "artifact\n")
    assert fingerprint(root) == before
    verify_fingerprint(root, before)


def test_fingerprint_follows_content_back_and_forth(repo: tuple[git.Repo, str]) -> None:
    root = _root(repo[0])
    before = fingerprint(root)
    original = (root / "src/app.py").read_text()
    _write(root, "src/app.py", "edited\n")
    edited = fingerprint(root)
    _write(root, "src/app.py", "edited again\n")
    assert fingerprint(root) not in (before, edited)
    _write(root, "src/app.py", original)
    assert fingerprint(root) == before


@pytest.mark.parametrize(
    "change",
    [
        "untracked_file",
        "exec_bit",
        "remote",
        "commit",
        "staged",
        "untracked_edit",
    ],
)
def test_any_change_to_current_source_or_remotes_changes_the_fingerprint(
    repo: tuple[git.Repo, str], change: str
) -> None:
    handle, _ = repo
    root = _root(handle)
    _write(root, "notes.md", "draft\n")  # untracked, not ignored: part of current source
    before = fingerprint(root)
    if change == "untracked_file":
        _write(root, "src/new.py")
    elif change == "exec_bit":
        os.chmod(root / "src/app.py", 0o755)
    elif change == "remote":
        handle.create_remote("origin", "https://github.com/acme/other.git")
    elif change == "commit":
        _commit(handle, "commit the notes")
    elif change == "staged":
        handle.git.add("notes.md")
    elif change == "untracked_edit":
        _write(root, "notes.md", "final\n")
    with pytest.raises(ProvenanceError, match="changed during review"):
        verify_fingerprint(root, before)


# --- verifier -----------------------------------------------------------------------------


def test_verifier_sees_tracked_and_unignored_files_only(repo: tuple[git.Repo, str]) -> None:
    root = _root(repo[0])
    _write(root, "src/new.py", "NEW_FLAG = 1\n")
    _write(root, "build/out.py")
    _write(root, "debug.log")
    verifier = GitCheckoutVerifier.open(root)
    assert verifier.is_file("src/app.py")
    assert verifier.is_tracked_or_unignored("src/app.py")
    assert verifier.is_tracked_or_unignored("src/new.py")
    assert verifier.exists("build/out.py")
    assert not verifier.is_tracked_or_unignored("build/out.py")
    assert verifier.exists("debug.log")
    assert not verifier.is_tracked_or_unignored("debug.log")
    assert verifier.is_folder("src")
    assert verifier.is_tracked_or_unignored("src")
    assert verifier.is_folder("build")
    assert not verifier.is_tracked_or_unignored("build")
    assert verifier.read_text("src/new.py", 100) == "NEW_FLAG = 1\n"
    for bad in ("../repo/src/app.py", "/etc/passwd", "src//app.py", "", "src\\app.py"):
        assert not verifier.exists(bad)
        assert verifier.read_text(bad, 100) is None
