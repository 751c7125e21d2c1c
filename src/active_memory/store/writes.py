"""The write path shared by publish, revert, purge and import: one checked transaction.

Every change names the revision it will write; the caller has already compared expected and
found revisions under the same ``BEGIN IMMEDIATE`` lock, so nothing can slip in between the
check and the write. Capacity is measured after the writes, inside the transaction, and a
batch that crosses a limit is rolled back whole.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from active_memory.errors import PublicationError, PublicationFenced, StoreError
from active_memory.limits import LIMITS
from active_memory.models.lessons import GraphScope, LessonDraft
from active_memory.store.backend import PublicationControl
from active_memory.store.checked_rows import row_checksum
from active_memory.store.codec import encode_draft
from active_memory.store.results import HistoryOp, StoreLimits
from active_memory.store.schema_guard import refuse_foreign_code
from active_memory.store.search_text import text_statements
from active_memory.store.sql import SqlConnection
from active_memory.store.unreadable import safe_message

__all__ = [
    "GENERATION_ROW",
    "META_ROW",
    "STATE_COLUMNS",
    "Capacity",
    "Change",
    "PlannedWrites",
    "RowState",
    "apply_changes",
    "cannot_cross",
    "check_bounds",
    "count_capacity",
    "plan_writes",
    "read_capacity",
    "read_generation",
    "read_states",
    "read_transaction",
    "rows_by_id",
    "scrub_file",
    "states_of_rows",
    "utc_now",
    "write_transaction",
]

# Well under SQLite's default limit on bound parameters (32766 since 3.32, 999 before).
_CHUNK = 500
_HISTORY_ROWS = 50  # nine parameters a row


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@contextmanager
def write_transaction(
    conn: sqlite3.Connection, control: PublicationControl | None = None
) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception rolls everything back.

    ``control`` is consulted before waiting for the lock and again once it is held, the last
    moment before the first write is dispatched. A trigger or view in the file that
    active-memory did not create refuses the write before it can run (``schema_guard``).
    """
    _fence(control)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        raise StoreError(
            f"the lesson store stayed locked by another writer past the busy timeout ({error}); "
            "nothing was written, retry"
        ) from error
    try:
        _fence(control)
        refuse_foreign_code(conn)
        yield
        conn.execute("COMMIT")
    except (sqlite3.Error, UnicodeDecodeError) as error:  # the latter: a damaged schema
        _rollback(conn)
        raise StoreError(
            f"the lesson store failed while writing ({safe_message(error)}); nothing was "
            "committed, run `active-memory store check`"
        ) from None
    except BaseException:
        _rollback(conn)
        raise


@contextmanager
def read_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every SELECT inside sees the same committed state (WAL)."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        _rollback(conn)


def scrub_file(conn: sqlite3.Connection) -> bool:
    """Drop the pages a delete freed from the file and its WAL, after the deleting commit.

    The store runs with secure delete, so freed cells are zeroed; a truncating checkpoint and
    VACUUM then leave no stale page behind. False when a busy reader kept the WAL (its old
    pages stay until that reader finishes)."""
    try:
        conn.execute("PRAGMA temp_store = MEMORY")  # VACUUM's copy stays off the disk
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.OperationalError:
        return False
    return not busy


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _fence(control: PublicationControl | None) -> None:
    if control is None:
        return
    refusal = control.refusal()
    if refusal is not None:
        raise PublicationFenced(f"publication not started: {refusal}; nothing was written")


@dataclass(frozen=True, slots=True)
class RowState:
    revision: int
    deleted: bool
    kind: str
    repository: str | None = None
    graph_hash: str | None = None

    @classmethod
    def from_columns(
        cls, revision: Any, deleted: Any, kind: Any, repository: Any, graph_hash: Any
    ) -> RowState:
        """The state of a row from its columns as ``STATE_COLUMNS`` names them."""
        return cls(int(revision), bool(deleted), str(kind), repository, graph_hash)

    def holds_scope_of(self, draft: LessonDraft) -> bool:
        """Whether this row is live with ``draft``'s kind, repository and graph: writing the
        draft over it then leaves every scope column as it is (:attr:`Change.keeps_scope`)."""
        scope = draft.scope
        # Not getattr with a default: a repository scope's missing attribute goes through
        # pydantic's __getattr__ and an AttributeError, about 2 us a card.
        graph_hash = scope.graph_hash if isinstance(scope, GraphScope) else None
        return (
            not self.deleted
            and self.kind == scope.kind
            and self.repository == scope.repository
            and self.graph_hash == graph_hash
        )


def rows_by_id(
    conn: SqlConnection, columns: str, ids: Iterable[str], *, live_only: bool = False
) -> Iterator[tuple[Any, ...]]:
    """``SELECT columns FROM records`` for the rows of ``ids`` that exist (each id asked once,
    ``live_only``: only live rows), in chunks under SQLite's limit on bound parameters."""
    wanted = list(dict.fromkeys(ids))
    live = "deleted = 0 AND " if live_only else ""
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        yield from conn.execute(
            f"SELECT {columns} FROM records WHERE {live}id IN ({marks})", chunk
        ).fetchall()


# What ``read_states`` reads of a row: the id, then ``RowState.from_columns``'s columns.
STATE_COLUMNS = "id, revision, deleted, kind, repository, graph_hash"


def read_states(conn: SqlConnection, ids: Iterable[str]) -> dict[str, RowState]:
    """Current revision, tombstone flag and scope columns of each id that has a row."""
    return states_of_rows(rows_by_id(conn, STATE_COLUMNS, ids))


def states_of_rows(rows: Iterable[Sequence[Any]]) -> dict[str, RowState]:
    """The states of rows read as ``STATE_COLUMNS`` (any further columns are left alone)."""
    return {row[0]: RowState.from_columns(*row[1:6]) for row in rows}


@dataclass(frozen=True, slots=True)
class Change:
    """One row write. ``draft`` None writes a tombstone (retire) or a purge marker.

    ``keeps_scope``: the row is live and already holds the draft's kind, repository and graph
    (:meth:`RowState.holds_scope_of`), so the write leaves those columns alone. SQLite then
    updates neither the indexes over them nor, through its trigger, the per-scope counts: on a
    batch of 100 such updates the statement costs a third of the full one."""

    id: str
    op: HistoryOp
    revision: int
    kind: str
    draft: LessonDraft | None = None
    create: bool = False
    source_revision: int | None = None
    keeps_scope: bool = False


@dataclass(frozen=True, slots=True)
class Capacity:
    live: int
    rows: int
    content_bytes: int


# The meta row as ``apply_changes`` reads it first, and the generation as a read does.
# PostgreSQL sends them with a transaction's start (the writers' lock is the first ``FOR
# UPDATE``, a snapshot's start has the second) and its session answers these reads from the
# row that came back (``PgSession``): one round trip fewer, under the lock for a write.
META_ROW = "SELECT generation, live_count, record_count, content_bytes FROM meta"
GENERATION_ROW = "SELECT generation FROM meta"


def read_generation(conn: SqlConnection) -> int:
    """The store-wide generation: how many batches have committed."""
    (generation,) = conn.execute(GENERATION_ROW).fetchone()
    return int(generation)


def read_capacity(conn: SqlConnection) -> Capacity:
    """The trigger-maintained counters in ``meta`` (one row, no scan)."""
    live, rows, size = conn.execute(
        "SELECT live_count, record_count, content_bytes FROM meta"
    ).fetchone()
    return Capacity(int(live), int(rows), int(size))


def count_capacity(conn: SqlConnection) -> Capacity:
    """The same figures recounted from ``records``, to audit the counters."""
    live = rows = size = 0
    for deleted, count, total in conn.execute(
        "SELECT deleted, count(*), coalesce(sum(size), 0) FROM records GROUP BY deleted"
    ):
        rows += int(count)
        size += int(total)
        if not deleted:
            live = int(count)
    return Capacity(live, rows, size)


def apply_changes(
    conn: SqlConnection,
    changes: Sequence[Change],
    *,
    run_id: str,
    limits: StoreLimits,
    last: bool = False,
) -> int:
    """Write ``changes`` and their history rows, check capacity, bump the generation.

    Must run inside ``write_transaction``; raises PublicationError (and the caller's
    transaction rolls back) when a body or the store would exceed a limit. ``last``: the
    caller runs nothing more in the transaction, so an engine may end it with these writes
    (``SqlConnection.pipeline``) when no limit is in reach.
    """
    # Every statement here runs under the writers' lock, and on PostgreSQL each round trip keeps
    # other writers waiting: the meta row is read once, every write is planned first and then
    # sent in one pipeline (PostgreSQL's; SQLite's does nothing), the row writes of one kind as
    # one executemany over many parameter rows, the history in one INSERT, and the new
    # counters come back from the generation's UPDATE.
    (generation, *counters) = conn.execute(META_ROW).fetchone()
    before = Capacity(*(int(value) for value in counters))
    generation = int(generation) + 1
    check_bounds(changes, generation)
    planned = plan_writes(changes, limits)
    statements = planned.history_statements(run_id, generation)
    statements += text_statements(conn, planned.texts)
    statements.append(
        (
            "UPDATE meta SET generation = ? RETURNING live_count, record_count, content_bytes",
            (generation,),
        )
    )
    # A batch too small to take any measure past its limit, whatever the rows it replaces, is
    # written with its transaction's end (``pipeline(last=True)``); one that might is checked
    # against the counters its writes leave before anything commits.
    last = last and cannot_cross(before, changes, planned.grown, limits)
    # The result is taken after the pipeline ends: a fetch inside it would wait for the server
    # once more than the pipeline's end already does.
    with conn.pipeline(last=last):
        for sql, parameter_rows in planned.writes:
            conn.executemany(sql, parameter_rows)
        sent = [conn.execute(sql, parameters) for sql, parameters in statements]
    if not last:
        after = sent[-1].fetchone()
        # A batch over a limit raises here, and the caller's transaction rolls every write back.
        _check_capacity(before, Capacity(*(int(value) for value in after)), limits)
    return generation


@dataclass(frozen=True, slots=True)
class PlannedWrites:
    """The rows a batch of changes writes, planned before the generation is known: each
    card encoded and checksummed, its body's size checked."""

    writes: list[tuple[str, list[tuple[object, ...]]]]  # runs of one statement, in order
    history: list[tuple[object, ...]]  # id, revision, op, body, evidence, source revision
    texts: list[tuple[str, tuple[str, str] | None, bool]]  # for ``search_text``
    grown: int  # the sizes written

    def history_statements(
        self, run_id: str, generation: int | None
    ) -> list[tuple[str, tuple[object, ...]]]:
        """The INSERTs of the history rows; ``generation`` None: each row takes the one the
        transaction has already written to ``meta`` (PostgreSQL's one-trip publication)."""
        now = utc_now()
        mark = "?" if generation is not None else "(SELECT generation FROM meta)"
        tail = () if generation is None else (generation,)
        row_marks = f"(?, ?, ?, ?, ?, ?, {mark}, ?, ?)"
        statements = []
        for start in range(0, len(self.history), _HISTORY_ROWS):
            rows = self.history[start : start + _HISTORY_ROWS]
            statements.append(
                (
                    "INSERT INTO history (id, revision, op, body, evidence, source_revision, "
                    "generation, run_id, time) VALUES " + ", ".join([row_marks] * len(rows)),
                    tuple(value for row in rows for value in (*row, *tail, run_id, now)),
                )
            )
        return statements


def plan_writes(changes: Sequence[Change], limits: StoreLimits) -> PlannedWrites:
    """The rows ``changes`` write; PublicationError for a card over the per-body limit."""
    writes: list[tuple[str, list[tuple[object, ...]]]] = []
    history: list[tuple[object, ...]] = []
    texts: list[tuple[str, tuple[str, str] | None, bool]] = []
    grown = 0
    for change in changes:
        body = evidence = None
        card = None
        if change.draft is not None:
            sql, values, (body, evidence), size = _live_write(change, change.draft, limits)
            grown += size
            card = (change.draft.title, change.draft.recommendation)
        elif change.create:
            sql, values = _INSERT_TOMBSTONE, (change.id, change.revision, change.kind)
        else:
            sql, values = _UPDATE_TOMBSTONE, (change.revision, change.id)
        if writes and writes[-1][0] == sql:
            writes[-1][1].append(values)
        else:
            writes.append((sql, [values]))
        history.append(
            (change.id, change.revision, change.op, body, evidence, change.source_revision)
        )
        texts.append((change.id, card, change.op == "purge"))
    return PlannedWrites(writes, history, texts, grown)


def cannot_cross(
    before: Capacity, changes: Sequence[Change], grown: int, limits: StoreLimits
) -> bool:
    """Whether no limit can be passed by ``changes``: each writes one row, so it adds at most
    one live lesson and one row, and at most its own size (``grown`` in all) to the content;
    what it replaces can only lower that."""
    count = len(changes)
    return (
        before.live + count <= limits.max_live
        and before.rows + count <= limits.max_rows
        and before.content_bytes + grown <= limits.max_total_bytes
    )


def _live_write(
    change: Change, draft: LessonDraft, limits: StoreLimits
) -> tuple[str, tuple[object, ...], tuple[str, str], int]:
    """The statement and parameters that write ``draft`` (``change``'s) as its live row, the
    body and evidence they write (the history row keeps the same text) and the row's size."""
    encoded = encode_draft(draft)
    if encoded.body_bytes > limits.max_body_bytes:
        raise PublicationError(
            f"lesson {change.id!r} has a {encoded.body_bytes}-byte card; the per-body "
            f"limit is {limits.max_body_bytes} bytes; shorten its scope lists"
        )
    # The draft was validated by its model; the checksum lets a snapshot prove the row is still
    # what was validated without validating it again. It hashes the very strings bound below.
    checksum = row_checksum(
        (change.id, change.revision, encoded.body, encoded.evidence, encoded.kind,
         encoded.repository, encoded.graph_hash, encoded.node_id)
    )  # fmt: skip
    content = (encoded.body, encoded.evidence)
    if change.keeps_scope:
        values: tuple[object, ...] = (change.revision, encoded.node_id, *content, encoded.size,
                                      checksum, change.id)  # fmt: skip
        return _UPDATE_CONTENT, values, content, encoded.size
    values = (change.revision, encoded.kind, encoded.repository, encoded.graph_hash,
              encoded.node_id, *content, encoded.size, checksum, change.id)  # fmt: skip
    return (_INSERT_LIVE if change.create else _UPDATE_LIVE), values, content, encoded.size


_INSERT_LIVE = (
    "INSERT INTO records (revision, deleted, kind, repository, graph_hash, node_id, body, "
    "evidence, size, checksum, id) VALUES (?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_LIVE = (
    "UPDATE records SET revision = ?, deleted = 0, kind = ?, repository = ?, graph_hash = ?, "
    "node_id = ?, body = ?, evidence = ?, size = ?, checksum = ? WHERE id = ?"
)
# A live row whose scope stays: only the columns that change. The node id is not indexed.
_UPDATE_CONTENT = (
    "UPDATE records SET revision = ?, node_id = ?, body = ?, evidence = ?, size = ?, "
    "checksum = ? WHERE id = ?"
)
_INSERT_TOMBSTONE = "INSERT INTO records (id, revision, deleted, kind, size) VALUES (?, ?, 1, ?, 0)"
_UPDATE_TOMBSTONE = (
    "UPDATE records SET revision = ?, deleted = 1, repository = NULL, graph_hash = NULL, "
    "node_id = NULL, body = NULL, evidence = NULL, size = 0, checksum = NULL WHERE id = ?"
)


def check_bounds(changes: Sequence[Change], generation: int) -> None:
    """PublicationError when ``generation`` or a change's revision is past what the store keeps."""
    # SQLite stores int64; past it Python would raise a bare OverflowError mid-batch.
    top = LIMITS.stored_integer_max
    if generation > top:
        raise PublicationError(
            f"the store's generation would pass {top}, the largest the store can hold; nothing "
            "was published, move the lessons to a new store (export, then import)"
        )
    # Every write, not only what a line or a mutation names: the next revision of a lesson at
    # the bound would make an export that no import accepts.
    highest = LIMITS.revision_max
    for change in changes:
        if change.revision > highest:
            raise PublicationError(
                f"lesson {change.id!r} is at the highest revision ({highest}) and cannot "
                "change; nothing was published, import its content as a new lesson instead"
            )


def _check_capacity(before: Capacity, after: Capacity, limits: StoreLimits) -> None:
    # Only a batch that grows a measure past its limit fails, so a store already over a
    # (lowered) limit can still shrink.
    checks = (
        (after.live, before.live, limits.max_live, "live lessons", "retire some first"),
        (
            after.rows,
            before.rows,
            limits.max_rows,
            "rows including tombstones",
            "move to a new store",
        ),
        (
            after.content_bytes,
            before.content_bytes,
            limits.max_total_bytes,
            "bytes of stored content",
            "retire or shorten lessons",
        ),
    )
    for value, previous, limit, what, advice in checks:
        if value > limit and value > previous:
            raise PublicationError(
                f"capacity limit reached: the batch would leave {value} {what}; the limit is "
                f"{limit}; nothing was published, {advice}"
            )
