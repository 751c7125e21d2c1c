"""What the checkout is, and whether it can justify destructive lesson changes.

Everything here reads local git objects and the working tree; nothing fetches, pulls or changes
branches. Git runs with lazy fetching, optional locks, terminal prompts and fsmonitor hooks off,
so inspecting a partial clone or a hostile config neither touches the network nor runs code.
Every git command has a time limit (git itself waits for ever on a FIFO planted as
``.git/config`` or ``.git/info/exclude``), and the files GitPython reads in this process
(``.git``, ``commondir``, ``config``) must be regular files before it is asked to.

- :func:`inspect_checkout`: HEAD, cleanliness, shallow/partial/submodule/detached, repository key.
- :func:`is_ancestor` and :func:`destructive_changes_allowed`: adapting or retiring a repository
  lesson needs its recorded source commit to be an ancestor of the clean, complete HEAD; anything
  else (dirty, non-git, shallow, filtered, submodules, missing commit, divergent or squashed
  history, unknown legacy provenance) defers the change.
- :func:`fingerprint` / :func:`verify_fingerprint`: the checkout must not change between review
  and publication (HEAD, index, tracked and non-ignored files with content and exec bits, remotes).
- :class:`GitCheckoutVerifier`: what admission's source stage may believe about a cited path.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from active_memory.bounded_input import file_kind, open_regular
from active_memory.checkout_digest import (
    checkout_digest,
    config_entries,
    config_text,
    has_changes,
    split_branch_headers,
)
from active_memory.errors import InputRefused, ProvenanceError
from active_memory.repository import git_dir, repository_key

if TYPE_CHECKING:
    import git

__all__ = [
    "CheckoutState",
    "CheckoutVerifier",
    "GitCheckoutVerifier",
    "Verdict",
    "destructive_changes_allowed",
    "fingerprint",
    "inspect_and_fingerprint",
    "inspect_checkout",
    "is_ancestor",
    "verify_fingerprint",
]

_SAFE_ENV = {
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
}
_SAFE_CONFIG = ("-c", "core.fsmonitor=false")
_COMMIT = re.compile(r"[0-9a-f]{7,64}")
# Far above any local git command on a real checkout; a module constant so tests can lower it.
GIT_TIMEOUT_S = 60.0


def _special(path: str) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return file_kind(mode)


def _refuse_special_git_files(root: str) -> None:
    """ProvenanceError when a file GitPython or git would block on is special (a FIFO, a device)."""
    dot_git = os.path.join(root, ".git")
    candidates = [dot_git]
    git_dirs = [dot_git] if os.path.isdir(dot_git) else []
    if os.path.isfile(dot_git):
        linked = git_dir(Path(root))
        if linked is not None:
            git_dirs.append(str(linked))
    for directory in git_dirs:
        candidates += [os.path.join(directory, name) for name in _GIT_FILES]
    for candidate in candidates:
        kind = _special(candidate)
        if kind is not None:
            raise ProvenanceError(
                f"checkout {root!r} has {kind} at {candidate!r}, where git expects a regular "
                "file; remove it to inspect the checkout"
            )


# Read by GitPython in this process or by every git command, so checked before either runs.
_GIT_FILES = ("commondir", "config", "HEAD", "index", "info/exclude", "packed-refs")


def _open(path: str | os.PathLike[str]) -> git.Repo | None:
    """The repository whose work tree is exactly ``path``; None for anything else."""
    _refuse_special_git_files(os.fspath(path))
    # GitPython costs a tenth of a second to import; admission (and every command that imports
    # it) loads this module, but only an inspection of a checkout needs git.
    import git

    try:
        repo = git.Repo(os.fspath(path))
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None
    if repo.bare:
        return None
    return repo


def _git(repo: git.Repo, *args: str) -> tuple[int, bytes]:
    command = ["git", *_SAFE_CONFIG, *args]
    try:
        done = subprocess.run(
            command,
            cwd=repo.working_dir,
            env={**os.environ, **_SAFE_ENV},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ProvenanceError(
            f"git {args[0]} in {str(repo.working_dir)!r} did not finish within {GIT_TIMEOUT_S:g} "
            "s (a FIFO or device in the checkout or its git directory can hold git); remove it"
        ) from None
    except OSError as error:
        raise ProvenanceError(f"git cannot run ({error.strerror or error})") from None
    return done.returncode, done.stdout


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class CheckoutState:
    """One inspection of a checkout. Only a git work tree has the git fields set."""

    path: Path
    is_git: bool
    head: str | None = None
    clean: bool = False
    shallow: bool = False
    has_submodules: bool = False
    partial: bool = False
    detached: bool = False
    repository: str | None = None

    @property
    def source_commit(self) -> str | None:
        """The commit a new lesson may record as its source: HEAD of a clean checkout only."""
        return self.head if self.is_git and self.clean else None


def _repository_key(root: Path) -> str:
    """The key recall uses too: lessons published from here must be recalled from any subfolder."""
    return repository_key(root)


# One config read answers both the partial-clone question and the fingerprint's config part;
# ``-z`` so a subsection with a space or a value with a newline cannot blur key and value.
_CONFIG_QUERY = ("config", "-z", "--get-regexp", r"^(remote|extensions)\.")
_PROMISOR = re.compile(rb"remote\..*\.promisor")


def _is_partial_config(config_z: bytes) -> bool:
    """A promisor remote set to true, or ``extensions.partialclone`` set at all."""
    for key, value in config_entries(config_z):
        if key == b"extensions.partialclone":
            return True
        line = key + (b"" if value is None else b" " + value)
        if _PROMISOR.fullmatch(key) and any(
            part.split()[-1].lower() == b"true" for part in line.splitlines() if part.split()
        ):
            return True
    return False


def _is_partial(repo: git.Repo) -> bool:
    return _is_partial_config(_git(repo, *_CONFIG_QUERY)[1])


@dataclass(frozen=True, slots=True)
class _Reading:
    """What four git commands said about one work tree (each process costs ~10-20 ms of CPU, so
    one command answers several questions; see :func:`_read`)."""

    head: str | None  # HEAD^{commit}; None on an unborn branch or a HEAD that is no commit
    head_ref: bytes | None  # what ``rev-parse HEAD`` printed, when it resolved to a commit
    shallow: bool
    detached: bool
    status: bytes  # ``status --porcelain=v2 -z`` as without ``--branch`` (see split_branch_headers)
    index: bytes  # ``ls-files --stage -z``
    config: bytes  # the remote and extension config


def _read(repo: git.Repo) -> _Reading:
    # ``--`` keeps a work tree file named HEAD from making the revision ambiguous.
    status, revs = _git(repo, "rev-parse", "--is-shallow-repository", "HEAD", "HEAD^{commit}", "--")
    lines = revs.splitlines()
    resolved = status == 0 and len(lines) == 4
    _status, porcelain = _git(
        repo,
        *("status", "--porcelain=v2", "--branch", "--no-ahead-behind", "-z"),
        *("--untracked-files=all", "--ignore-submodules=none"),
    )
    headers, status_v2 = split_branch_headers(porcelain)
    branch = headers.get(b"branch.head")
    if branch is None or branch in (b"(detached)", b"(unknown)"):
        # A branch may be named "(detached)": only symbolic-ref proves HEAD is not a branch.
        detached = _git(repo, "symbolic-ref", "-q", "HEAD")[0] != 0
    else:
        detached = False
    _status, index = _git(repo, "ls-files", "--stage", "-z")
    return _Reading(
        head=_text(lines[2]) if resolved else None,
        head_ref=lines[1] if resolved else None,
        shallow=bool(lines) and lines[0] == b"true",
        detached=detached,
        status=status_v2,
        index=index,
        config=_git(repo, *_CONFIG_QUERY)[1],  # as -z: see config_text
    )


def _state(root: Path, reading: _Reading) -> CheckoutState:
    gitlinks = any(entry.startswith(b"160000 ") for entry in reading.index.split(b"\0"))
    return CheckoutState(
        path=root,
        is_git=True,
        head=reading.head,
        clean=reading.head is not None and not has_changes(reading.status),
        shallow=reading.shallow,
        has_submodules=gitlinks or (root / ".gitmodules").exists(),
        partial=_is_partial_config(reading.config),
        detached=reading.detached,
        repository=_repository_key(root),
    )


def _inspect(
    path: str | os.PathLike[str], *, fingerprinted: bool, dirty: bool = True
) -> tuple[CheckoutState, str | None]:
    root = Path(path)
    if not root.is_dir():
        raise ProvenanceError(f"checkout {os.fspath(root)!r} is not a directory; pass the root")
    repo = _open(root)
    if repo is None:
        return CheckoutState(path=root, is_git=False, repository=_repository_key(root)), None
    # Plain git commands, not GitPython objects: those keep a cat-file process alive per repo.
    reading = _read(repo)
    state = _state(root, reading)
    if not fingerprinted or not (dirty or state.clean):
        return state, None
    head_ref = reading.head_ref
    if head_ref is None:  # unborn, or a HEAD that is no commit: ask exactly as fingerprint does
        head_ref = _git(repo, "rev-parse", "--verify", "-q", "HEAD")[1]
    config = config_text(reading.config)
    return state, checkout_digest(root, head_ref, reading.index, reading.status, config)


def inspect_checkout(path: str | os.PathLike[str]) -> CheckoutState:
    """Inspect ``path``; a folder that is not a git work tree root gives ``is_git=False``."""
    return _inspect(path, fingerprinted=False)[0]


def inspect_and_fingerprint(
    path: str | os.PathLike[str], *, dirty: bool = True
) -> tuple[CheckoutState, str | None]:
    """:func:`inspect_checkout` and the :func:`fingerprint` the checkout has now, from the same
    four git commands instead of ten. The fingerprint is None when the checkout is not a git
    work tree, and, with ``dirty=False``, when it is not clean (nothing then hashes its changes).
    """
    return _inspect(path, fingerprinted=True, dirty=dirty)


def is_ancestor(repo_path: str | os.PathLike[str], old_commit: str, new_commit: str) -> bool | None:
    """Whether ``old_commit`` is an ancestor of (or equal to) ``new_commit``.

    None means unknown: not a git work tree, a commit missing locally, or a shallow or partial
    clone whose local history cannot answer without fetching.
    """
    repo = _open(repo_path)
    if repo is None or not (_COMMIT.fullmatch(old_commit) and _COMMIT.fullmatch(new_commit)):
        return None
    # One rev-parse: shallow, and whether both commits exist locally (it fails on a missing one).
    commits = (f"{old_commit}^{{commit}}", f"{new_commit}^{{commit}}")
    found, shallow = _git(repo, "rev-parse", "--is-shallow-repository", *commits, "--")
    if shallow.startswith(b"true\n") or _is_partial(repo) or found != 0:
        return None
    status, _ = _git(repo, "merge-base", "--is-ancestor", old_commit, new_commit)
    if status in (0, 1):
        return status == 0
    return None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether destructive changes (adapt, retire) may publish, and a stable reason code."""

    allowed: bool
    reason: str


def destructive_changes_allowed(
    state: CheckoutState, previous_source_commit: str | None
) -> Verdict:
    """May a lesson recorded at ``previous_source_commit`` be adapted or retired now?

    Reasons: ``ancestor`` (allowed), ``not_git``, ``unknown_provenance``, ``no_head``,
    ``dirty``, ``shallow``, ``filtered``, ``submodules``, ``missing_commit``, ``divergent``
    (divergent or squashed history: the recorded commit is not in HEAD's history).
    """
    if not state.is_git:
        return Verdict(False, "not_git")
    if previous_source_commit is None:
        return Verdict(False, "unknown_provenance")
    checks = (
        (state.head is None, "no_head"),
        (not state.clean, "dirty"),
        (state.shallow, "shallow"),
        (state.partial, "filtered"),
        (state.has_submodules, "submodules"),
    )
    for failed, reason in checks:
        if failed:
            return Verdict(False, reason)
    assert state.head is not None
    ancestor = is_ancestor(state.path, previous_source_commit, state.head)
    if ancestor is None:
        return Verdict(False, "missing_commit")
    if not ancestor:
        return Verdict(False, "divergent")
    return Verdict(True, "ancestor")


def fingerprint(path: str | os.PathLike[str]) -> str:
    """A sha256 over HEAD, the index, every changed or untracked non-ignored file (content and
    exec bit) and the remote and extension config. Unchanged tracked files are covered by the
    index entries (git compares them to the work tree), so cost grows with the changes only.
    """
    root = Path(path)
    repo = _open(root)
    if repo is None:
        raise ProvenanceError(
            f"cannot fingerprint {os.fspath(root)!r}: it is not the root of a git work tree"
        )
    _status, head = _git(repo, "rev-parse", "--verify", "-q", "HEAD")
    _status, index = _git(repo, "ls-files", "--stage", "-z")
    _status, status = _git(
        repo, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignore-submodules=none"
    )
    config = config_text(_git(repo, *_CONFIG_QUERY)[1])
    return checkout_digest(root, head, index, status, config)


def verify_fingerprint(path: str | os.PathLike[str], expected: str) -> None:
    """Raise ProvenanceError when the checkout no longer has the fingerprint taken at review."""
    actual = fingerprint(path)
    if actual != expected:
        raise ProvenanceError(
            f"checkout {os.fspath(path)!r} changed during review (fingerprint "
            f"{expected[:12]!r} is now {actual[:12]!r}); keep it unchanged until publication, "
            "or run the review again"
        )


@runtime_checkable
class CheckoutVerifier(Protocol):
    """What admission may believe about a root-relative path of the current checkout."""

    def exists(self, path: str) -> bool: ...

    def is_file(self, path: str) -> bool: ...

    def is_folder(self, path: str) -> bool: ...

    def is_tracked_or_unignored(self, path: str) -> bool: ...

    def read_text(self, path: str, max_bytes: int) -> str | None: ...


def _literal_parts(path: str) -> list[str] | None:
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def _parent_folders(files: Iterable[str]) -> frozenset[str]:
    """Every folder holding at least one of ``files`` (git tracks files, never folders)."""
    folders: set[str] = set()
    for file in files:
        parts = file.split("/")
        folders.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return frozenset(folders)


class GitCheckoutVerifier:
    """A snapshot of the tracked and untracked-but-not-ignored files of a git work tree.

    Paths resolve through symlinks; a citation counts only when the resolved target stays inside
    the checkout and every symlink on the way, and the target, are tracked or not ignored, so the
    cited bytes are among those the fingerprint covers.
    """

    def __init__(self, root: Path, visible: frozenset[str]) -> None:
        self._root = Path(os.path.realpath(root))
        self._visible = visible
        self._folders = _parent_folders(visible)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> GitCheckoutVerifier:
        repo = _open(path)
        if repo is None:
            raise ProvenanceError(
                f"cannot verify citations in {os.fspath(path)!r}: it is not the root of a git "
                "work tree, so no file is tracked or known to be unignored"
            )
        _status, listed = _git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        visible = frozenset(_text(p) for p in listed.split(b"\0") if p)
        return cls(Path(path), visible)

    def _relative(self, real: Path) -> str | None:
        try:
            return real.relative_to(self._root).as_posix()
        except ValueError:
            return None

    def _walk(self, path: str) -> tuple[Path, bool] | None:
        """The canonical path, and whether every symlink on the way is visible."""
        parts = _literal_parts(path)
        if parts is None:
            return None
        current = self._root
        links_visible = True
        for part in parts:
            candidate = current / part
            if candidate.is_symlink():
                link = self._relative(candidate)
                links_visible = links_visible and link is not None and link in self._visible
            current = Path(os.path.realpath(candidate))
            if self._relative(current) is None:
                return None  # escapes the checkout
        return current, links_visible

    def exists(self, path: str) -> bool:
        walked = self._walk(path)
        return walked is not None and walked[0].exists()

    def is_file(self, path: str) -> bool:
        walked = self._walk(path)
        return walked is not None and walked[0].is_file()

    def is_folder(self, path: str) -> bool:
        walked = self._walk(path)
        return walked is not None and walked[0].is_dir()

    def is_tracked_or_unignored(self, path: str) -> bool:
        walked = self._walk(path)
        if walked is None or not walked[1]:
            return False
        real, _ = walked
        relative = self._relative(real)
        if relative is None:
            return False
        if real.is_dir():
            return relative == "" or relative in self._folders
        return real.is_file() and relative in self._visible

    def read_text(self, path: str, max_bytes: int) -> str | None:
        if not (self.is_file(path) and self.is_tracked_or_unignored(path)):
            return None
        walked = self._walk(path)
        assert walked is not None
        try:
            descriptor = open_regular(walked[0], what=repr(path))
        except InputRefused:
            return None
        with os.fdopen(descriptor, "rb") as handle:
            data = handle.read(max_bytes)
        return data.decode("utf-8", "replace")
