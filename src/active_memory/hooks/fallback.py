"""Recall straight from the lesson store, for a helper that found no broker.

A plain harness user without ``active-memory serve`` still gets recall: the helper opens the
store read-only, indexes the workspace's repository lessons and answers. The index is built from
the stored rows (:mod:`active_memory.store.rows`) and cached beside the store until the store or
the repository key changes (:mod:`active_memory.hooks.index_cache`), so a repeated call checks
the status of the store's files (reading its stamp only when they changed, or changed too
recently to vouch for it), loads the cached index and matches. Exposures are kept in a small private
file per conversation beside the store, the one ``serve`` reads and appends too
(:mod:`active_memory.hooks.exposure_files`), so a card is still delivered once per conversation,
whichever of them answers. A call that names no conversation (no session id nor transcript) is
answered untracked: nothing is remembered for it.

Inside a host's run (``ACTIVE_MEMORY_LEDGER`` names the run's private ledger folder), the helper
comes here when the run's broker did not answer in time: the exposures are then the run's own
files, the ones its broker reads and appends, and the call is written to the run's journal
(:mod:`active_memory.hooks.run_ledger`), so the run records it as a receipt and its cards as
deliveries, once, and its broker does not deliver them again.

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

from active_memory.hooks.claude import context_cap
from active_memory.hooks.dispatch import answer_hook, harness_adapter
from active_memory.hooks.exposure_files import (
    EXPOSURE_MAX_AGE_S,
    MAX_LEDGER_BYTES,
    PRUNE_EVERY_S,
    PRUNE_LIMIT,
    ExposureFiles,
    exposure_file,
    prune_exposures,
)
from active_memory.hooks.index_cache import load_index
from active_memory.recall.exposure import ExposureLedger
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.type_checking import TYPE_CHECKING

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

# run_ledger.ENV_LEDGER (a test keeps them equal): outside a run, where the variable is unset, the
# run's ledger module is not even imported (about 0.15 ms a call).
_ENV_LEDGER = "ACTIVE_MEMORY_LEDGER"


def answer_from_store(
    harness: str, document: object, *, store: str, workspace: str, call_id: str | None = None
) -> tuple[bytes, Callable[[], None]] | None:
    """The encoded answer and a commit callback (record once printed), or None.

    ``document`` is the hook payload as decoded JSON (the helper decodes it strictly);
    ``call_id`` is the helper's nonce, the one the broker was asked with.
    """
    adapter = harness_adapter(harness)
    parsed = adapter.parse(document) if adapter is not None else None
    if parsed is None:
        return None
    root = WorkspaceRoot.at(workspace)
    cwd = parsed.call.cwd
    if cwd is None or root.resolve(cwd, None) is None:
        return None  # a call from another project: answered empty without reading the store
    conversation = os.environ.get("ACTIVE_MEMORY_CONVERSATION") or parsed.session_id
    cached = load_index(store, workspace)
    # The conversation's file is read when the cards are claimed and appended on commit.
    run_folder = None
    if os.environ.get(_ENV_LEDGER):
        from active_memory.hooks.run_ledger import ledger_folder

        run_folder = ledger_folder()
    files = ExposureFiles(store, workspace, folder=run_folder)
    ledger = ExposureLedger(records=False, store=files)
    session = RecallSession(cached.index, root, manifest=False, ledger=ledger)
    try:
        answer = answer_hook(
            session,
            harness,
            document,
            node_id=os.environ.get("ACTIVE_MEMORY_NODE"),
            conversation_id=conversation,
            execution_id=os.environ.get("ACTIVE_MEMORY_EXECUTION"),
            workspace_only=True,
            max_chars=context_cap(os.environ) if harness == "claude" else None,
        )
    except Exception:
        # A cached index that fails may come from a damaged file: drop it, the next call
        # rebuilds it (at worst a needless rebuild).
        if cached.from_cache:
            cached.discard()
        raise

    if run_folder is None or answer.recall is None:
        return answer.body, answer.commit  # an untracked call records nothing
    recall = answer.recall
    from active_memory.hooks.run_ledger import write_fallback_entry

    def commit() -> None:
        recall.commit()
        caller = recall.caller
        if caller is None:
            return
        write_fallback_entry(
            run_folder,
            call_id=call_id,
            conversation=caller.conversation_id,
            tracked=caller.tracked,
            node=os.environ.get("ACTIVE_MEMORY_NODE"),
            execution=caller.execution_id,
            tool=recall.report.tool,
            paths=recall.report.paths,
            keys=recall.report.delivered,
        )

    return answer.body, commit
