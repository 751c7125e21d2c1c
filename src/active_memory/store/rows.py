"""A store's live repository rows, read straight from its file, for the hook fallback.

When no broker answers, the command helper recalls from the store itself, once per tool call.
The rows were validated when they were written, so here they are only decoded, into plain
objects carrying the lesson's attribute names (``id``, ``revision``, ``title``,
``recommendation``, ``scope.kind`` and the scope's associations: what recall reads of a card),
never re-validated into models. A row that does not decode to that shape is skipped: the hook
must answer, and one damaged card must not silence the others.

The file is opened the way :mod:`active_memory.store.connect` opens it, reduced to reading:
nothing but a private regular file holding an SQLite header is handed to SQLite (a store others
can write is a prompt-injection channel), through a read-only URI with a busy timeout, trusted
schema off, and the file must still be the one inspected once SQLite has it open. Those modules
are not reused because of what they import; this one imports only the standard library and the
exception tree, since it runs on every tool call.
"""

from __future__ import annotations

# _sqlite3 is sqlite3's C module itself: the package around it only adds date adapters (never
# used here) and would cost a hook call about 2 ms more to import.
import _sqlite3
import os
import stat

from active_memory.errors import StoreUnavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers see True
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, Literal, TypeAlias

    # st_dev, st_ino, created_at, generation, live_count, record_count, content_bytes
    StoreStamp: TypeAlias = tuple[int, int, str, int, int, int, int]

__all__ = ["BUSY_TIMEOUT_MS", "KNOWN_MIGRATIONS", "StoreRows", "StoredCard", "StoredScope"]

# The schema these reads are written for (a test keeps it equal to store.migrations).
KNOWN_MIGRATIONS = ("m001_initial",)
# A hook answers within its harness's timeout; a writer holds the lock for milliseconds.
BUSY_TIMEOUT_MS = 1000
_HEADER = b"SQLite format 3\x00"
_POSIX = hasattr(os, "geteuid")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


class StoredScope:
    """A repository scope as stored: its key and the associations that retrieve the card."""

    __slots__ = ("files", "folders", "identifiers", "keyword_groups", "repository")
    kind: Literal["repository"] = "repository"

    def __init__(
        self,
        repository: str,
        files: tuple[str, ...],
        folders: tuple[str, ...],
        identifiers: tuple[str, ...],
        keyword_groups: tuple[tuple[str, ...], ...],
    ) -> None:
        self.repository = repository
        self.files = files
        self.folders = folders
        self.identifiers = identifiers
        self.keyword_groups = keyword_groups


class StoredCard:
    """One live repository lesson's card as stored (its evidence is never read)."""

    __slots__ = ("id", "recommendation", "revision", "scope", "title")

    def __init__(
        self, id: str, revision: int, title: str, recommendation: str, scope: StoredScope
    ) -> None:
        self.id = id
        self.revision = revision
        self.title = title
        self.recommendation = recommendation
        self.scope = scope

    def __repr__(self) -> str:
        return f"StoredCard({self.id!r}, {self.revision}, {self.title!r})"


def _strings(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None
    return tuple(value)


def decode_card(
    lesson_id: object, revision: object, body: object, repository: str
) -> StoredCard | None:
    """A live row of ``repository`` as a card; None when it does not have the stored shape."""
    if not isinstance(lesson_id, str) or type(revision) is not int or revision < 1:
        return None
    if not isinstance(body, str):
        return None
    import json  # rows are decoded only when the cached index is rebuilt, never on a warm call

    try:
        card: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(card, dict):
        return None
    title, recommendation, scope = card.get("title"), card.get("recommendation"), card.get("scope")
    if not isinstance(title, str) or not isinstance(recommendation, str):
        return None
    if not isinstance(scope, dict) or scope.get("kind") != "repository":
        return None
    if scope.get("repository") != repository:
        return None  # the indexed column and the body disagree: trust neither
    files, folders = _strings(scope.get("files")), _strings(scope.get("folders"))
    identifiers, raw_groups = _strings(scope.get("identifiers")), scope.get("keyword_groups")
    if files is None or folders is None or identifiers is None or not isinstance(raw_groups, list):
        return None
    groups = tuple(_strings(group) for group in raw_groups)
    if any(group is None for group in groups):
        return None
    keyword_groups = tuple(group for group in groups if group is not None)
    stored = StoredScope(repository, files, folders, identifiers, keyword_groups)
    return StoredCard(lesson_id, revision, title, recommendation, stored)


def _file_uri(path: str) -> str:
    """A ``file:`` URI for SQLite, percent-encoded (``?`` and ``#`` would end the path)."""
    text = path.replace(os.sep, "/")
    if not text.startswith("/"):
        text = "/" + text  # a drive path: file:///C:/...
    return "file://" + "".join(
        chr(byte) if byte in _URI_SAFE else f"%{byte:02X}" for byte in os.fsencode(text)
    )


def _inspect(path: str) -> os.stat_result:
    """The store file's stat, when it is one this user alone may use; else StoreUnavailable."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise StoreUnavailable(path, f"cannot be inspected ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise StoreUnavailable(path, "is not a regular file (a symbolic link is refused too)")
    if _POSIX and (info.st_uid != os.geteuid() or info.st_mode & 0o077):
        raise StoreUnavailable(path, "must be owned by you and private (mode 0600)")
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError as error:
        raise StoreUnavailable(path, f"cannot be read ({error.strerror})") from None
    try:
        header = os.read(descriptor, len(_HEADER))
    finally:
        os.close(descriptor)
    if header != _HEADER:
        raise StoreUnavailable(path, "is not an SQLite database")
    return info


class StoreRows:
    """A read-only connection to one store file, for the few reads the hook fallback makes."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        self.path = os.path.abspath(os.fspath(path))
        info = _inspect(self.path)
        self._file = (info.st_dev, info.st_ino)
        try:
            self._conn = _sqlite3.connect(
                _file_uri(self.path) + "?mode=ro",
                uri=True,
                isolation_level=None,
                timeout=busy_timeout_ms / 1000,
            )
        except _sqlite3.Error as error:
            raise StoreUnavailable(self.path, f"cannot be opened by SQLite ({error})") from None
        try:
            self._conn.execute("PRAGMA trusted_schema = OFF")
            now = os.lstat(self.path)
            if (now.st_dev, now.st_ino) != self._file:
                raise StoreUnavailable(self.path, "was replaced while opening")
            names = [row[0] for row in self._conn.execute(
                "SELECT name FROM schema_migrations ORDER BY seq")]  # fmt: skip
            if tuple(names) != KNOWN_MIGRATIONS:
                raise StoreUnavailable(self.path, f"has schema {names!r}, not the one read here")
        except (OSError, _sqlite3.Error) as error:
            self._conn.close()
            raise StoreUnavailable(self.path, f"cannot be read ({error})") from None
        except BaseException:
            self._conn.close()
            raise

    def _stamp(self) -> StoreStamp:
        row = self._conn.execute(
            "SELECT created_at, generation, live_count, record_count, content_bytes FROM meta"
        ).fetchone()
        created, generation, live, records, size = row
        return (*self._file, str(created), int(generation), int(live), int(records), int(size))

    def stamp(self) -> StoreStamp:
        """What identifies the store's content: the file, its creation, the generation and its
        counters (a file restored over the store changes one of them)."""
        try:
            return self._stamp()
        except _sqlite3.Error as error:
            raise StoreUnavailable(self.path, f"cannot be read ({error})") from None

    def repository_cards(self, repository: str) -> tuple[StoreStamp, tuple[StoredCard, ...]]:
        """The stamp and the live cards of ``repository`` by id, read in one transaction;
        rows that do not decode are left out."""
        try:
            self._conn.execute("BEGIN")
            try:
                stamp = self._stamp()
                rows = self._conn.execute(
                    "SELECT id, revision, body FROM records WHERE kind = 'repository' "
                    "AND deleted = 0 AND repository = ? ORDER BY id",
                    (repository,),
                ).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        except _sqlite3.Error as error:
            raise StoreUnavailable(self.path, f"cannot be read ({error})") from None
        cards = (decode_card(lesson_id, revision, body, repository)
                 for lesson_id, revision, body in rows)  # fmt: skip
        return stamp, tuple(card for card in cards if card is not None)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> StoreRows:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
