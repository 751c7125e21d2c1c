"""Which repository a run belongs to, proven from its checkout as it is now.

A run's recorded workspace is resolved to the git checkout that contains it; the checkout's own
identity (the key its ``origin`` remote gives, else its local path key) is the namespace. A
recorded remote (a saved record's ``forge:`` key, a Codex session's repository URL) must give
that exact identity; a recorded ``local:`` key must be the one the checkout resolves to; an
opaque ``repo:`` key cannot be proven from a checkout at all. Folder names never prove anything.
Nothing is cloned or fetched. Probes are shared: one inspection per checkout per call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import LessonValidationError, ProvenanceError
from active_memory.provenance import CheckoutState, inspect_and_fingerprint
from active_memory.repository import find_checkout, local_repository_key, repository_key_from_remote

__all__ = ["Probe", "Probes", "aliases", "prove_identity"]


@dataclass(frozen=True, slots=True)
class Probe:
    """One checkout as it is now; ``code``/``reason`` say why it cannot be used."""

    root: Path | None
    state: CheckoutState | None = None
    key: str | None = None
    fingerprint: str | None = None
    code: str | None = None
    reason: str | None = None


def _probe(workspace: str) -> Probe:
    if not os.path.isdir(workspace):
        return Probe(
            None,
            code="moved_checkout",
            reason=(
                f"the recorded checkout {workspace!r} no longer exists (moved or deleted); nothing "
                "is cloned: restore it there, or ignore the repository"
            ),
        )
    root = find_checkout(workspace)
    if root is None:
        return Probe(None, code="not_git", reason=f"{workspace!r} is not inside a git checkout")
    try:
        # One set of git commands gives the state and (when clean) the fingerprint.
        state, fingerprint = inspect_and_fingerprint(root, dirty=False)
        if not state.is_git:
            return Probe(
                root, state, code="not_git", reason=f"{str(root)!r} is not a git work tree"
            )
        if not state.clean:
            return Probe(
                root,
                state,
                state.repository,
                code="dirty",
                reason=(
                    f"the checkout {str(root)!r} has uncommitted or untracked changes; commit or "
                    "stash them, or ignore the repository"
                ),
            )
        return Probe(root, state, state.repository, fingerprint)
    except ProvenanceError as error:
        return Probe(root, code="not_git", reason=str(error))


class Probes:
    """Checkout probes shared across the runs of one call, keyed by the checkout root."""

    def __init__(self) -> None:
        self._by_root: dict[Path, Probe] = {}

    def probe(self, workspace: str) -> Probe:
        root = find_checkout(workspace) if os.path.isdir(workspace) else None
        if root is not None and root in self._by_root:
            return self._by_root[root]
        found = _probe(workspace)
        if found.root is not None:
            self._by_root[found.root] = found
        return found


def prove_identity(
    probe: Probe, workspace: str, recorded_key: str | None, recorded_remote: str | None
) -> tuple[str, str] | None:
    """``(code, reason)`` when the run's recorded identity is not the checkout's, else None."""
    assert probe.key is not None
    assert probe.root is not None
    if recorded_remote is not None:
        try:
            historical = repository_key_from_remote(recorded_remote)
        except LessonValidationError:
            return "unproven_identity", "its recorded remote gives no repository identity"
        if historical != probe.key:
            return "changed_remote", (
                f"it ran against {historical!r} but the checkout {str(probe.root)!r} is now "
                f"{probe.key!r}; restore the remote, or ignore the repository"
            )
    if recorded_key is None:
        return None
    if recorded_key.startswith("forge:"):
        if recorded_key != probe.key:
            return "changed_remote", (
                f"it ran against {recorded_key!r} but the checkout {str(probe.root)!r} is now "
                f"{probe.key!r}; restore the remote, or ignore the repository"
            )
        return None
    if recorded_key.startswith("local:"):
        own = {probe.key, local_repository_key(probe.root), local_repository_key(workspace)}
        if recorded_key not in own:
            return "unproven_identity", (
                f"its recorded repository id {recorded_key!r} is not the id the checkout "
                f"{str(probe.root)!r} resolves to"
            )
        return None
    return "unproven_identity", (
        f"its repository {recorded_key!r} is an opaque namespace a checkout cannot prove"
    )


def aliases(root: Path, key: str) -> tuple[str, ...]:
    """What ``--ignore-repos`` matches: folder name, absolute path, the namespace key, and for
    a forge key its owner/repo and repository name."""
    found = [root.name, str(root), key]
    if key.startswith("forge:"):
        path = key.split("/", 1)[1] if "/" in key else ""
        found += [path, path.rsplit("/", 1)[-1]]
    return tuple(dict.fromkeys(alias for alias in found if alias))
