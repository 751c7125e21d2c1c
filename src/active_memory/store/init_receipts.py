"""Memory init's publication receipts: a row written in the publishing transaction itself.

The filesystem and the database cannot share a transaction, so a session's local completion
checkpoint is written after the commit. The receipt row closes that gap: a process killed
between the two finds the row on resume and completes the checkpoint instead of publishing
again; once the checkpoint is durable the row is removed. A publication whose session already
has a row writes nothing and returns the stored receipt.

The session's quarantined discoveries are held in the store's ``quarantine`` table (where
``active-memory lessons review`` finds them, :mod:`active_memory.store.quarantine`) by the same
transaction, so a crash can neither publish without holding them nor hold them twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from active_memory.errors import StoreError
from active_memory.models.changes import Publication
from active_memory.store.backend import PublicationReceipt
from active_memory.store.checked import publish_checked
from active_memory.store.quarantine_rows import QuarantineEntry, hold_entries
from active_memory.store.results import StoreLimits
from active_memory.store.sql import SqliteConnection
from active_memory.store.writes import utc_now

__all__ = ["delete_receipt", "publish_with_receipt", "read_receipt"]


def _encode(receipt: PublicationReceipt) -> str:
    return json.dumps(
        {
            "generation": receipt.generation,
            "revisions": receipt.revisions,
            "retired": list(receipt.retired),
        },
        sort_keys=True,
    )


def _decode(text: str) -> PublicationReceipt:
    try:
        data = json.loads(text)
        revisions = {str(key): int(value) for key, value in data["revisions"].items()}
        return PublicationReceipt(
            int(data["generation"]), revisions, tuple(str(i) for i in data["retired"])
        )
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise StoreError(
            f"a memory init receipt in the lesson store is damaged ({error!r}); "
            "run `active-memory store check`"
        ) from None


def read_receipt(conn: sqlite3.Connection, session: str) -> PublicationReceipt | None:
    row = conn.execute("SELECT receipt FROM init_receipts WHERE session = ?", (session,)).fetchone()
    return None if row is None else _decode(str(row[0]))


def publish_with_receipt(
    conn: SqliteConnection,
    publication: Publication,
    session: str,
    limits: StoreLimits,
    held: Sequence[QuarantineEntry] = (),
) -> tuple[PublicationReceipt, bool]:
    """Inside the caller's write transaction: the stored receipt and False when ``session``
    already published, else the checked publication, the ``held`` quarantine entries, its
    receipt row, and True."""
    stored = read_receipt(conn, session)
    if stored is not None:
        return stored, False
    hold_entries(conn, held)
    receipt = publish_checked(conn, publication, limits)
    conn.execute(
        "INSERT INTO init_receipts (session, receipt, time) VALUES (?, ?, ?)",
        (session, _encode(receipt), utc_now()),
    )
    return receipt, True


def delete_receipt(conn: sqlite3.Connection, session: str) -> None:
    conn.execute("DELETE FROM init_receipts WHERE session = ?", (session,))
