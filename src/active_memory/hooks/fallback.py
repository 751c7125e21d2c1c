"""Recall straight from the lesson store, for a helper that found no broker.

A plain harness user without ``active-memory serve`` still gets recall: the helper opens the
store read-only, indexes the workspace's repository lessons and answers. The index is built from
the stored rows (:mod:`active_memory.store.rows`) and cached beside the store until the store or
the repository key changes (:mod:`active_memory.hooks.index_cache`), so a repeated call opens the
store, reads its stamp, loads the cached index and matches. Exposures are kept in a small private
file per conversation beside the store, so a card is still delivered once per conversation. A
call that names no conversation (no session id nor transcript) is answered untracked: nothing is
remembered for it.

This runs in a fresh process on every tool call, so it imports neither the models (pydantic)
nor asyncio, threading or logging; a test checks ``sys.modules`` after a call.

The store may sit in a folder others can write, where another user could make ``exposure``
first and plant ledgers that suppress cards. So nothing in that folder is read, written or
pruned unless it is a real directory (not a symlink) of this user's alone, mode 0700, and a
ledger or cached index counts only when it is this user's regular file, mode 0600, opened
without following a symlink (:mod:`active_memory.hooks.private_dir`). Otherwise the call is
answered as in a fresh conversation, and nothing is remembered.

Those files are pruned opportunistically: at most once a day, when a delivery is recorded,
exposure and cache files not written for :data:`EXPOSURE_MAX_AGE_S` (7 days) are removed,
looking at no more than :data:`PRUNE_LIMIT` of them.
"""

from __future__ import annotations

import os
import stat
import time

from active_memory.errors import RecallError
from active_memory.hooks.dispatch import HARNESSES, answer_hook
from active_memory.hooks.index_cache import load_index
from active_memory.hooks.private_dir import (
    digest_name,
    is_private,
    is_private_dir,
    private_dir,
    read_private,
)
from active_memory.recall.card import card_key
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.store.rows import StoreRows

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers see True
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "EXPOSURE_MAX_AGE_S",
    "MAX_LEDGER_BYTES",
    "PRUNE_EVERY_S",
    "PRUNE_LIMIT",
    "answer_from_store",
    "exposure_file",
    "prune_exposures",
]

EXPOSURE_MAX_AGE_S = 7 * 24 * 3600
PRUNE_EVERY_S = 24 * 3600
PRUNE_LIMIT = 4096
# A ledger holds one ``id@revision`` line per delivery; one this large is not the fallback's.
MAX_LEDGER_BYTES = 4 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_PRUNED_MARKER = ".pruned"
# Exposure ledgers, cached indexes (rebuilt when missing) and what a crash left of their writes.
_PRUNED_SUFFIXES = (".keys", ".index", ".tmp")


def exposure_file(store: str | os.PathLike[str], workspace: str, conversation: str) -> str:
    """Where exposures of one conversation in one workspace are kept."""
    folder = os.path.join(os.path.dirname(os.path.abspath(store)), "exposure")
    return os.path.join(
        folder, digest_name(f"{os.path.realpath(workspace)}\0{conversation}") + ".keys"
    )


def prune_exposures(
    directory: str | os.PathLike[str],
    *,
    keep: str | os.PathLike[str] | None = None,
    now: float | None = None,
    max_age_s: float = EXPOSURE_MAX_AGE_S,
    every_s: float = PRUNE_EVERY_S,
    limit: int = PRUNE_LIMIT,
) -> int:
    """Remove exposure and cache files older than ``max_age_s`` if no prune ran in ``every_s``.

    Bounded: looks at no more than ``limit`` entries. Returns how many files were removed.
    Nothing is done in a folder that is not a real directory of this user's alone (0700).
    """
    if not is_private_dir(directory):
        return 0
    now = time.time() if now is None else now
    marker = os.path.join(directory, _PRUNED_MARKER)
    kept = None if keep is None else os.fspath(keep)
    try:
        if now - os.stat(marker).st_mtime < every_s:
            return 0
    except FileNotFoundError:
        pass
    except OSError:
        return 0
    removed = 0
    try:
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= limit:
                    break
                if not entry.name.endswith(_PRUNED_SUFFIXES) or entry.path == kept:
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime > max_age_s:
                        os.unlink(entry.path)
                        removed += 1
                except OSError:
                    continue  # another process pruned it first, or it is not ours
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | _NOFOLLOW, 0o600))
        os.utime(marker, (now, now))
    except OSError:
        pass
    return removed


def _read_keys(path: str) -> list[str]:
    """The keys the ledger at ``path`` records; none when it, or its folder, is not this user's
    alone (another user could otherwise suppress cards), a symlink, or not text."""
    if not is_private_dir(os.path.dirname(path)):
        return []
    data = read_private(path, MAX_LEDGER_BYTES)
    try:
        return [] if data is None else data.decode("utf-8").split()
    except ValueError:
        return []


def _record(ledger_path: str, lines: str) -> None:
    """Append ``lines`` to the ledger, in a folder of this user's alone; else record nothing."""
    folder = os.path.dirname(ledger_path)
    try:
        private_dir(folder)
    except (OSError, RecallError):
        return  # not ours (another user made it, or a symlink): it is neither read nor written
    prune_exposures(folder, keep=ledger_path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW
    descriptor = os.open(ledger_path, flags, 0o600)
    with os.fdopen(descriptor, "a", encoding="utf-8") as handle:
        info = os.fstat(descriptor)
        if stat.S_ISREG(info.st_mode) and is_private(info):
            handle.write(lines)


def answer_from_store(
    harness: str, document: object, *, store: str, workspace: str
) -> tuple[bytes, Callable[[], None]] | None:
    """The encoded answer and a commit callback (record once printed), or None.

    ``document`` is the hook payload as decoded JSON (the helper decodes it strictly).
    """
    adapter = HARNESSES.get(harness)
    parsed = adapter.parse(document) if adapter is not None else None
    if parsed is None:
        return None
    root = WorkspaceRoot.at(workspace)
    cwd = parsed.call.cwd
    if cwd is None or root.resolve(cwd, None) is None:
        return None  # a call from another project: answered empty without reading the store
    conversation = os.environ.get("ACTIVE_MEMORY_CONVERSATION") or parsed.session_id
    with StoreRows(store) as rows:
        cached = load_index(rows, workspace)
    session = RecallSession(cached.index, root, manifest=False)
    ledger_path = None
    if conversation:
        ledger_path = exposure_file(store, workspace, conversation)
        session.ledger.mark_delivered(conversation, _read_keys(ledger_path))
    try:
        answer = answer_hook(
            session,
            harness,
            document,
            node_id=os.environ.get("ACTIVE_MEMORY_NODE"),
            conversation_id=conversation,
            execution_id=os.environ.get("ACTIVE_MEMORY_EXECUTION"),
            workspace_only=True,
        )
    except Exception:
        # A cached index that fails may come from a damaged file: drop it, the next call
        # rebuilds it (at worst a needless rebuild).
        if cached.from_cache:
            cached.discard()
        raise

    def commit() -> None:
        recall = answer.recall
        if recall is None or not recall.claim.lessons:
            return
        answer.commit()
        if ledger_path is None:
            return  # untracked: nothing to remember
        _record(ledger_path, "".join(f"{card_key(lesson)}\n" for lesson in recall.claim.lessons))

    return answer.body, commit
