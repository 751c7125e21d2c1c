"""Reading a zeroshot CLI lesson store, read-only, into active-memory export lines.

The zeroshot CLI keeps an incompatible SQLite store (``meta`` row with a store-wide
``generation``; ``records`` keyed by ``id`` with ``revision``, ``deleted``, ``kind``,
``repository``, ``graph_hash``, ``node_id`` and ``body``, the card as JSON; an
initialization-receipts table). It is never opened as ours (``connect.py`` refuses it);
:func:`read_zeroshot_store` reads it so ``active-memory lessons import --from-zeroshot PATH``
can publish what maps through the ordinary checked import (validation, the admission screen,
expected revisions, all or nothing).

Never a write, never a file left beside it: a store with no ``-wal``/``-shm``/``-journal``
companion is opened ``mode=ro&immutable=1`` (SQLite then creates nothing) and checked to be
unchanged afterwards; one with both ``-wal`` and ``-shm`` (a zeroshot process has it open) is
opened ``mode=ro`` and read in one transaction, using the companions that are already there;
any other leftover is refused.

Mapping, per record (columns win over the body where both say it):

* **id**: kept when it is a ``lesson-<ULID>``; any other ``lesson-…`` id gets a new id derived
  from it (the same on every import, so importing twice changes nothing), reported as renamed;
* **revision**: kept, so ``id@revision`` keys recorded elsewhere stay meaningful;
* **tombstones** (``deleted``) become tombstone lines: the id stays reserved here too;
* **repository keys** (``forge:…``, ``local:…``, ``repo:…``) are taken as they are when they
  are credential-free keys; graph scopes keep graph hash, node id and optional repository;
* **card fields**: ``title``, ``recommendation``; scope from ``scope`` (or the body itself)
  with ``files``, ``folders``, ``identifiers``, ``keyword_groups`` (``keywordGroups``,
  ``keywords``); camelCase and snake_case both read;
* **evidence**: ``evidence`` with ``run_id``/``runId``, ``references``, ``reason`` (else the
  card's ``reasons``/``reason``) and ``source_commit``/``sourceCommit`` (else the commit of a
  ``source:<commit>`` reference); references of a shape active-memory does not know are dropped,
  and a card left with none is not taken.

Every record that cannot be taken is reported with its id (or row number) and why, never its
text: a validation problem is given with quoted values removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import stat
from collections.abc import Collection, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.errors import ConfigError, LessonValidationError, StoreUnavailable
from active_memory.models.ids import lesson_id_problem
from active_memory.models.lessons import Lesson, validate_reference
from active_memory.store.files import SQLITE_HEADER
from active_memory.store.results import Tombstone
from active_memory.store.transfer import lesson_line

__all__ = [
    "NotTaken",
    "ZeroshotCards",
    "is_zeroshot_store_file",
    "looks_like_zeroshot_schema",
    "read_zeroshot_store",
]

_FIELD = "zeroshot store"
MAX_RECORDS = 100_000  # the zeroshot store's own cap on rows, tombstones included
MAX_BODY_BYTES = 64 * 1024  # zeroshot caps a body at 8 KiB; anything far beyond is not a card
_REQUIRED_COLUMNS = ("id", "revision", "deleted", "kind", "body")
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_ZEROSHOT_ID = re.compile(r"lesson-[A-Za-z0-9._-]{1,120}")
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_SOURCE_COMMIT = re.compile(r"source:([0-9a-f]{40}(?:[0-9a-f]{24})?)")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def looks_like_zeroshot_schema(names: Collection[str]) -> bool:
    """Whether an SQLite schema (its table names) is a zeroshot store rather than ours."""
    return "records" in names and "meta" in names and "schema_migrations" not in names


def is_zeroshot_store_file(path: Path) -> bool:
    """Whether the SQLite file at ``path`` holds a zeroshot store, read without a trace.

    For opening: SQLite creates ``-wal``/``-shm`` beside a WAL database even to read it, so the
    schema is looked at first through an ``immutable`` connection, which creates nothing. Only
    when nothing is beside the file (otherwise the ordinary schema check decides); any failure
    answers False and leaves the decision to that check.
    """
    if any(_companions(path)):
        return False
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return False
    with closing(conn):
        try:
            conn.execute("PRAGMA trusted_schema = OFF")
            names = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
        except (sqlite3.Error, UnicodeDecodeError):  # the latter: SQLite's message on bad schema
            return False
    return looks_like_zeroshot_schema(names)


@dataclass(frozen=True, slots=True)
class NotTaken:
    """A zeroshot record that was not imported: its id (or ``row N``), revision and why."""

    id: str
    revision: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, "reason": self.reason}

    def line(self) -> str:
        at = f" (revision {self.revision})" if self.revision is not None else ""
        return f"not taken: {self.id}{at}: {self.reason}"


@dataclass(frozen=True, slots=True)
class ZeroshotCards:
    """What a zeroshot store maps to: export lines for ``SqliteStore.import_lines``."""

    path: Path
    generation: int | None
    lines: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]  # (zeroshot id, active-memory id)
    not_taken: tuple[NotTaken, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": str(self.path),
            "source_generation": self.generation,
            "taken": len(self.lines),
            "renamed": dict(self.renamed),
            "not_taken": [item.to_dict() for item in self.not_taken],
        }


def read_zeroshot_store(path: str | os.PathLike[str]) -> ZeroshotCards:
    """Every record of the zeroshot store at ``path``, mapped or reported; nothing written.

    Raises ConfigError when ``path`` is not a zeroshot store (bad input) and StoreUnavailable
    when it cannot be read safely right now.
    """
    source = Path(os.path.abspath(os.fspath(path)))
    with _read_only(source) as conn:
        names = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
        if "schema_migrations" in names:
            raise ConfigError(
                _FIELD,
                f"{str(source)!r} is an active-memory store, not a zeroshot one; move its "
                "lessons with `active-memory lessons export` and `active-memory lessons import`",
            )
        columns = _columns(conn) if "records" in names else set()
        missing = [name for name in _REQUIRED_COLUMNS if name not in columns]
        if missing:
            raise ConfigError(
                _FIELD,
                f"{str(source)!r} is not a zeroshot lesson store (no records table with "
                f"{', '.join(missing)}); pass the zeroshot lessons.sqlite3 file",
            )
        generation = _generation(conn) if "meta" in names else None
        rows = _rows(conn, columns)
    return _map(source, generation, rows)


@contextmanager
def _read_only(source: Path) -> Iterator[sqlite3.Connection]:
    before = _inspect(source)
    companions = _companions(source)
    if not any(companions):
        mode = "ro&immutable=1"  # nothing beside it: SQLite creates no file and takes no lock
    elif companions == [True, True, False]:
        mode = "ro"  # a zeroshot process has it open: read through its write-ahead log
    else:
        raise StoreUnavailable(
            str(source),
            "has a leftover -wal, -shm or -journal file beside it (as after a crash); let "
            "zeroshot open it once so it recovers, then import again (nothing was read)",
        )
    try:
        conn = sqlite3.connect(f"{source.as_uri()}?mode={mode}", uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise StoreUnavailable(str(source), f"cannot be opened read-only ({error})") from None
    with closing(conn):
        try:
            conn.execute("PRAGMA trusted_schema = OFF")
            conn.execute("PRAGMA query_only = ON")
            conn.execute("BEGIN")
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            raise StoreUnavailable(
                str(source), f"is not a readable SQLite database ({error})"
            ) from None
    if mode != "ro" and (_inspect(source) != before or any(_companions(source))):
        raise StoreUnavailable(
            str(source),
            "changed while it was read (a zeroshot process is writing it); stop zeroshot and "
            "import again (nothing was imported)",
        )


def _companions(source: Path) -> list[bool]:
    return [os.path.lexists(f"{source}{suffix}") for suffix in ("-wal", "-shm", "-journal")]


def _inspect(source: Path) -> tuple[int, int, int, int]:
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        raise ConfigError(_FIELD, f"{str(source)!r} does not exist") from None
    except OSError as error:
        raise StoreUnavailable(str(source), f"cannot be inspected ({error.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise ConfigError(_FIELD, f"{str(source)!r} is a symbolic link; pass the real file")
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(_FIELD, f"{str(source)!r} is not a regular file")
    try:
        with open(source, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise StoreUnavailable(str(source), f"cannot be read ({error.strerror})") from None
    if header != SQLITE_HEADER:
        raise ConfigError(_FIELD, f"{str(source)!r} is not an SQLite database")
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {str(row[1]) for row in conn.execute("PRAGMA table_info(records)")}


def _generation(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("SELECT generation FROM meta LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    value = row[0] if row else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _rows(conn: sqlite3.Connection, columns: set[str]) -> list[dict[str, Any]]:
    wanted = [
        *_REQUIRED_COLUMNS,
        *(c for c in ("repository", "graph_hash", "node_id") if c in columns),
    ]
    select = ", ".join(f'"{name}"' for name in wanted)
    cursor = conn.execute(f"SELECT {select} FROM records ORDER BY id LIMIT ?", (MAX_RECORDS + 1,))
    # Numbered in id order (a WITHOUT ROWID table has no rowid), to name a row without an id.
    rows = [
        {"row": number, **dict(zip(wanted, row, strict=True))}
        for number, row in enumerate(cursor, 1)
    ]
    if len(rows) > MAX_RECORDS:
        raise ConfigError(
            _FIELD, f"holds more than {MAX_RECORDS:,} records, more than a zeroshot store can"
        )
    return rows


def _map(source: Path, generation: int | None, rows: list[dict[str, Any]]) -> ZeroshotCards:
    lines: list[str] = []
    renamed: list[tuple[str, str]] = []
    not_taken: list[NotTaken] = []
    taken: dict[str, str] = {}  # active-memory id -> zeroshot id
    for row in rows:
        label = _label(row)
        revision = row["revision"]
        revision_shown = revision if isinstance(revision, int) else None
        try:
            lesson_id, line = _record(row)
        except _Refused as refused:
            not_taken.append(NotTaken(label, revision_shown, refused.reason))
            continue
        if lesson_id in taken:
            reason = f"maps to {lesson_id}, which {taken[lesson_id]} already took"
            not_taken.append(NotTaken(label, revision_shown, reason))
            continue
        taken[lesson_id] = label
        if lesson_id != row["id"]:
            renamed.append((label, lesson_id))
        lines.append(line)
    return ZeroshotCards(source, generation, tuple(lines), tuple(renamed), tuple(not_taken))


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _label(row: Mapping[str, Any]) -> str:
    value = row["id"]
    if isinstance(value, str) and _PLAIN_ID.fullmatch(value):
        return value
    return f"row {row['row']}"


def _record(row: Mapping[str, Any]) -> tuple[str, str]:
    lesson_id = _lesson_id(row["id"])
    revision = row["revision"]
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise _Refused("its revision is not an integer of 1 or more")
    kind = row["kind"]
    if kind not in ("repository", "graph"):
        raise _Refused("its kind is neither repository nor graph")
    if row["deleted"] not in (0, 1, False, True):
        raise _Refused("its deleted flag is neither 0 nor 1")
    if row["deleted"]:
        return lesson_id, lesson_line(Tombstone(id=lesson_id, revision=revision, kind=kind))
    body = _body(row["body"])
    data = {
        "id": lesson_id,
        "revision": revision,
        "scope": _scope(kind, row, body),
        "title": _pick(_card(body), "title"),
        "recommendation": _pick(_card(body), "recommendation"),
        "evidence": _evidence(body),
    }
    try:
        lesson = Lesson.parse(data)
    except LessonValidationError as error:
        raise _Refused(f"{error.field}: {_QUOTED.sub('…', error.problem)}") from None
    from active_memory.screening.cards import screen_card  # on use, as in store.transfer

    problems = screen_card(lesson.draft)
    if problems:
        raise _Refused(f"refused by the admission screen ({', '.join(problems)})")
    return lesson_id, lesson_line(lesson)


def _lesson_id(value: object) -> str:
    if not isinstance(value, str):
        raise _Refused("its id is not text")
    if lesson_id_problem(value) is None:
        return value
    if not _ZEROSHOT_ID.fullmatch(value):
        raise _Refused("its id is not a lesson id (lesson-…)")
    # Deterministic: the same zeroshot id always maps to the same active-memory id.
    number = int.from_bytes(hashlib.sha256(f"zeroshot:{value}".encode()).digest()[:17], "big")
    chars = [_CROCKFORD[(number >> (5 * i)) & 31] for i in range(26)]
    chars[-1] = _CROCKFORD[number % 8]  # a ULID's first character is 0-7
    return "lesson-" + "".join(reversed(chars))


def _body(value: object) -> dict[str, Any]:
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise _Refused("its body is not UTF-8 text") from None
    if not isinstance(value, str):
        raise _Refused("it is live but has no body")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
        raise _Refused(f"its body is larger than {MAX_BODY_BYTES // 1024} KiB")
    try:
        data = json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        raise _Refused("its body is not valid JSON") from None
    if not isinstance(data, dict):
        raise _Refused("its body is not a JSON object")
    return data


def _card(body: dict[str, Any]) -> dict[str, Any]:
    card = body.get("card")
    return card if isinstance(card, dict) else body


def _pick(source: object, *names: str) -> Any:
    if not isinstance(source, dict):
        return None
    for name in names:
        for spelling in (name, _camel(name)):
            if spelling in source and source[spelling] is not None:
                return source[spelling]
    return None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _scope(kind: str, row: Mapping[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    card = _card(body)
    nested = _pick(card, "scope")
    scope = nested if isinstance(nested, dict) else card
    associations = _pick(scope, "associations")
    where = associations if isinstance(associations, dict) else scope
    repository = row.get("repository") or _pick(scope, "repository")
    if kind == "graph":
        result: dict[str, Any] = {
            "kind": "graph",
            "graph_hash": row.get("graph_hash") or _pick(scope, "graph_hash"),
            "node_id": row.get("node_id") or _pick(scope, "node_id"),
        }
        if repository:
            result["repository"] = repository
        return result
    result = {"kind": "repository", "repository": repository}
    for name in ("files", "folders", "identifiers"):
        value = _pick(where, name)
        if value is not None:
            result[name] = value
    groups = _pick(where, "keyword_groups", "keywords")
    if groups is not None:
        result["keyword_groups"] = groups
    return result


def _evidence(body: dict[str, Any]) -> dict[str, Any]:
    card = _card(body)
    found = _pick(body, "evidence")
    if not isinstance(found, dict):
        found = _pick(card, "evidence")
    if not isinstance(found, dict):
        raise _Refused("it has no evidence (run id, references, reason)")
    references = _pick(found, "references", "refs")
    if not isinstance(references, list):
        raise _Refused("its evidence has no list of references")
    kept = [ref for ref in references if _valid_reference(ref)]
    if not kept:
        raise _Refused(
            "none of its evidence references has a shape active-memory knows (exec:, "
            "receipt:, repository:, graph:, source:)"
        )
    commit = _pick(found, "source_commit")
    if commit is None:
        commit = next((m.group(1) for ref in kept if (m := _SOURCE_COMMIT.fullmatch(ref))), None)
    reason = _pick(found, "reason", "reasons") or _pick(card, "reasons", "reason")
    if isinstance(reason, list) and all(isinstance(item, str) for item in reason):
        reason = "; ".join(reason)  # zeroshot's card "reasons"; ours is one line
    return {
        "run_id": _pick(found, "run_id", "run"),
        "references": kept[:8],
        "reason": reason,
        "source_commit": commit,
    }


def _valid_reference(value: object) -> bool:
    try:
        validate_reference("reference", value)
    except LessonValidationError:
        return False
    return True
