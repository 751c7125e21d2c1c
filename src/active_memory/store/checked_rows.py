"""Row checksums, and the lessons of a snapshot decoded on first access.

Every live row is validated and screened when it is written: publication, import and revert go
through the models, and through the secret and injection screen (``screening.cards``) before
the write (publish screens unless its host names the screen the drafts already passed,
``PublicationControl.screened_by``; the memory service never takes that claim). The writer then
stores a checksum of exactly what it wrote: id, revision, scope columns, card and evidence. So a
row's checksum means "validated and screened": a snapshot proves each row is still that row by
recomputing the checksum (a hash per row, no JSON parsing), instead of re-validating and
re-screening 10,000 cards up front, and recall (the broker, and the hook's standard-library
fallback that reads rows through ``store.rows``) serves those rows without screening them
again. The Lesson models are built from the verified rows when a caller reads them. Rows written
before publish screened (an older version) were screened only if admission, import or revert
wrote them; the recall renderer still escapes every frame tag admission refuses.

The checksum detects damage and hand edits, not an adversary with write access to the store
file: whoever can write the database can recompute it, and could as well replace the program.
``store check`` still validates every row and past revision completely.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from json.scanner import make_scanner
from typing import TYPE_CHECKING, TypeAlias, overload

from active_memory.errors import SnapshotError
from active_memory.models.lessons import Lesson, RepositoryScope
from active_memory.store.codec import LIVE_COLUMNS, DecodedRows, RecordError, decode_lesson
from active_memory.store.rows import row_checksum

if TYPE_CHECKING:
    # id, revision, title, recommendation, repository, files, folders, identifiers, groups
    RecallEntry: TypeAlias = tuple[
        str, int, str, str, str,
        Sequence[str], Sequence[str], Sequence[str], Sequence[Sequence[str]],
    ]  # fmt: skip

__all__ = [
    "StoredLessons",
    "backfill_checksums",
    "row_checksum",
    "verify_rows",
    "verify_snapshot_rows",
]

_blake2b = hashlib.blake2b
# One JSON value from a str at an index: (value, end). json.loads's own decoder, so the same
# values and the same errors (ValueError), and nothing kept between calls.
_SCAN_JSON = make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed: a decoder


def verify_rows(rows: Sequence[Sequence[object]]) -> None:
    """Check ``LIVE_COLUMNS, checksum`` rows; RecordError (prefixed by the id) on the first
    that does not match. One tight loop: this is the whole per-row price of a snapshot."""
    blake2b = _blake2b
    for lesson_id, revision, body, evidence, kind, repository, graph_hash, node_id, stored in rows:
        text = (  # the same text as row_checksum, inlined: a call per row costs more here
            f"{lesson_id}\0{revision}\0{body}\0{evidence}\0"
            f"{kind}\0{repository}\0{graph_hash}\0{node_id}"
        )
        if blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest() == stored:
            continue
        if stored is None:
            raise RecordError(
                f"{lesson_id!r} has no checksum (it failed validation when the store was "
                "upgraded, or was written outside active-memory)"
            )
        raise RecordError(
            f"{lesson_id!r} has content or scope columns that do not match its checksum: it "
            "was changed outside active-memory"
        )


def verify_snapshot_rows(
    rows: Sequence[Sequence[object]], *, source: str = "stored lesson", advice: str = ""
) -> None:
    """:func:`verify_rows` for a snapshot: SnapshotError naming the first damaged row, since a
    snapshot is refused whole rather than returned short. ``source`` names where the row came
    from (``"stored lesson"``, or the service that sent it); ``advice`` ends the message."""
    try:
        verify_rows(rows)
    except RecordError as error:
        raise SnapshotError(
            f"{source} {error}; the snapshot was refused rather than returned incomplete{advice}"
        ) from None


def backfill_checksums(conn: sqlite3.Connection) -> None:
    """Give every live row without a checksum one, if the row validates completely.

    Runs inside the caller's write transaction (a migration). A row that does not validate is
    left without a checksum, so snapshots keep refusing it until it is repaired or reverted.
    """
    rows = conn.execute(
        f"SELECT {LIVE_COLUMNS} FROM records WHERE deleted = 0 AND checksum IS NULL"
    ).fetchall()
    for row in rows:
        try:
            decode_lesson(row)
        except RecordError:
            continue
        conn.execute("UPDATE records SET checksum = ? WHERE id = ?", (row_checksum(row), row[0]))


class StoredLessons(Sequence[Lesson]):
    """The lessons of verified ``LIVE_COLUMNS, checksum`` rows, each decoded (and validated)
    the first time it is read.

    Behaves as a read-only tuple of lessons: indexing, slicing, iteration, ``len`` and equality
    with any sequence of the same lessons. Decoding goes through the store's ``DecodedRows``, so
    a row read before by the same store yields the same frozen Lesson without a second
    validation. A row that verified but no longer validates (a rule tightened since it was
    written) raises SnapshotError naming its id, never a partial list.
    """

    __slots__ = ("_decoded", "_lessons", "_rows")

    def __init__(self, rows: Sequence[tuple[object, ...]], decoded: DecodedRows) -> None:
        self._rows = tuple(rows)
        self._decoded = decoded
        self._lessons: list[Lesson | None] = [None] * len(self._rows)

    def ids(self) -> tuple[str, ...]:
        """Every lesson id, in order, without decoding a lesson."""
        return tuple(str(row[0]) for row in self._rows)

    def checksums(self) -> tuple[str, ...]:
        """Every row's checksum, in order: each covers its whole row, so equal checksums are
        equal rows (recall reuses the index it kept for them)."""
        return tuple(str(row[-1]) for row in self._rows)

    def recall_entries(self) -> Iterator[RecallEntry]:
        """Each repository lesson as recall indexes it, in order: ``id, revision, title,
        recommendation, repository, files, folders, identifiers, keyword_groups``, read from
        its row's JSON without building a model.

        The row's checksum, verified when the snapshot was read, already proves it is what its
        writer validated and screened. A body of another shape is decoded into its Lesson,
        which raises SnapshotError when the row does not validate. The evidence, which recall
        never reads, is validated when the lesson itself is first read.

        Each body is read by the JSON decoder's C scanner directly: ``json.loads`` around it
        (two whitespace matches and three Python frames per body) cost a third of the decoding
        at 100,000 rows. A body the scanner does not read to its last character (whitespace
        around it, a second value) goes through ``json.loads`` as before.
        """
        loads, scan = json.loads, _SCAN_JSON
        for position, row in enumerate(self._rows):
            if row[4] != "repository":
                continue
            body = row[2]
            try:
                try:
                    card, end = scan(body, 0)  # type: ignore[arg-type]  # a str, or TypeError
                except (StopIteration, TypeError):  # no JSON value starts here; not a str
                    end = -1
                if end != len(body):  # type: ignore[arg-type]  # else the except below
                    card = loads(body)  # type: ignore[arg-type]  # likewise
                scope = card["scope"]
                entry = (row[0], row[1], card["title"], card["recommendation"], row[5],
                         scope["files"], scope["folders"], scope["identifiers"],
                         scope["keyword_groups"])  # fmt: skip
                if scope["kind"] == "repository" and scope["repository"] == row[5]:
                    yield entry  # type: ignore[misc]  # shaped as its writer validated it
                    continue
            except (TypeError, ValueError, KeyError):
                pass
            lesson = self._lesson(position)
            lesson_scope = lesson.scope
            if isinstance(lesson_scope, RepositoryScope):  # pragma: no branch
                yield (lesson.id, lesson.revision, lesson.title, lesson.recommendation,
                       lesson_scope.repository, lesson_scope.files, lesson_scope.folders,
                       lesson_scope.identifiers, lesson_scope.keyword_groups)  # fmt: skip

    def graph_lessons(self) -> tuple[Lesson, ...]:
        """The graph lessons, decoded (a run holds a few of them)."""
        return tuple(self._lesson(n) for n, row in enumerate(self._rows) if row[4] == "graph")

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> Lesson: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Lesson, ...]: ...

    def __getitem__(self, index: int | slice) -> Lesson | tuple[Lesson, ...]:
        if isinstance(index, slice):
            return tuple(self._lesson(i) for i in range(*index.indices(len(self._rows))))
        if index < 0:
            index += len(self._rows)
        if not 0 <= index < len(self._rows):
            raise IndexError("snapshot lesson index out of range")
        return self._lesson(index)

    def __iter__(self) -> Iterator[Lesson]:
        for position in range(len(self._rows)):
            yield self._lesson(position)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to tuples, so not hashable like one

    def __repr__(self) -> str:
        return f"StoredLessons({len(self._rows)} lessons)"

    def _lesson(self, position: int) -> Lesson:
        lesson = self._lessons[position]
        if lesson is None:
            row = self._rows[position][:-1]  # without the checksum
            try:
                lesson = self._decoded.lesson(row)
            except RecordError as error:
                raise SnapshotError(
                    f"stored lesson {row[0]!r} {error}; run `active-memory store check`"
                ) from None
            self._lessons[position] = lesson
        return lesson
