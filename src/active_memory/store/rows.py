"""A store's live repository rows, read straight from its file, for the hook fallback.

When no broker answers, the command helper recalls from the store itself, once per tool call.
The rows are decoded into plain objects carrying the lesson's attribute names (``id``,
``revision``, ``title``, ``recommendation``, ``scope.kind`` and the scope's associations: what
recall reads of a card), not into models, but checked by the card model's rules rewritten with
the standard library (:func:`decode_card`): a row edited behind the store's back (a title of two
lines, a recommendation over its byte limit) is refused by ``active-memory store check`` and must
not reach an agent through the fallback either. Before that, each row must match the checksum
its writer stored (``store.checked_rows``), which every writer stores only for a card it
validated and screened: so the fallback, like a snapshot, serves only screened rows without
importing the screens. A row that fails is skipped: the hook must answer, and one damaged card
must not silence the others.

The file is opened the way :mod:`active_memory.store.connect` opens it, reduced to reading:
nothing but a private regular file holding an SQLite header is handed to SQLite (a store others
can write is a prompt-injection channel), through a read-only URI with a busy timeout, trusted
schema off, and the file must still be the one inspected once SQLite has it open. Those modules
are not reused because of what they import; this one imports only the standard library (and
the exception tree where it refuses a store), since it runs whenever the fallback's cached index
no longer holds.
"""

from __future__ import annotations

# _sqlite3 is sqlite3's C module itself: the package around it only adds date adapters (never
# used here) and would cost a hook call about 2 ms more to import.
import _sqlite3
import os
import stat
from collections.abc import Sequence

from active_memory.limits import BROAD_WORDS, LIMITS
from active_memory.store.closing import Closing
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Literal, TypeAlias

    # st_dev, st_ino, created_at, generation, live_count, record_count, content_bytes
    StoreStamp: TypeAlias = tuple[int, int, str, int, int, int, int]

__all__ = [
    "BUSY_TIMEOUT_MS",
    "KNOWN_MIGRATIONS",
    "READ_OPTIONAL_MIGRATIONS",
    "StoreRows",
    "StoredCard",
    "StoredScope",
    "checksum_matches",
    "readable_schema",
    "row_checksum",
]

# The schema these reads are written for (a test keeps it equal to store.migrations).
KNOWN_MIGRATIONS = (
    "m001_initial",
    "m002_row_checksums",
    "m003_quarantine",
    "m004_init_receipts",
    "m005_lesson_search",
)
# Migrations a reader does without: each only adds what a writer alone needs (m004: memory
# init's publication receipts; m005: the browser's search text and indexes, whose absence a
# search survives). A store the previous release wrote, not yet upgraded by a writer, still
# serves recall, snapshots and read-only commands.
READ_OPTIONAL_MIGRATIONS = frozenset({"m004_init_receipts", "m005_lesson_search"})
# A hook answers within its harness's timeout; a writer holds the lock for milliseconds.
BUSY_TIMEOUT_MS = 1000
_HEADER = b"SQLite format 3\x00"
_POSIX = hasattr(os, "geteuid")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


def readable_schema(applied: Iterable[str]) -> bool:
    """Whether a store whose migrations are ``applied`` (names, in order) can be read here: all
    of :data:`KNOWN_MIGRATIONS`, or a prefix of them that lacks only read-optional ones."""
    names = tuple(applied)
    count = len(names)
    return names == KNOWN_MIGRATIONS[:count] and all(
        name in READ_OPTIONAL_MIGRATIONS for name in KNOWN_MIGRATIONS[count:]
    )


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


# What a one-line field may not hold (models/fields.py ``_CONTROL``): C0 controls, DEL, NEL and
# the Unicode line and paragraph separators. Checked only when ``str.isprintable`` refuses the
# text, since it also refuses characters the model allows (no-break space, format characters…).
_CONTROL = frozenset([*map(chr, range(0x20)), "\x7f", "\x85", "\u2028", "\u2029"])
_GLOB = frozenset("*?[]{}")
_CARD_KEYS = frozenset({"title", "recommendation", "scope"})
_SCOPE_KEYS = frozenset({"kind", "repository", "files", "folders", "identifiers", "keyword_groups"})
_LESSON_ID_CHARS = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
_PATH_BYTES = LIMITS.path_bytes
_IDENTIFIER_CHARS = (LIMITS.identifier_min_chars, LIMITS.identifier_max_chars)
_GROUP_TERMS = (LIMITS.keyword_group_min_terms, LIMITS.keyword_group_max_terms)
_KEYWORD_CHARS = (LIMITS.keyword_min_chars, LIMITS.keyword_max_chars)


def _one_line(value: str, max_bytes: int) -> bool:
    """``models.fields.one_line_problem`` finds nothing: one non-blank line without control
    characters, at most ``max_bytes`` UTF-8 bytes."""
    if value.isascii():  # the common case: one byte per character, the controls not printable
        return value.isprintable() and 0 < len(value) <= max_bytes and not value.isspace()
    if not value.strip():
        return False
    if not value.isprintable() and not _CONTROL.isdisjoint(value):
        return False
    try:
        return len(value.encode("utf-8")) <= max_bytes
    except UnicodeEncodeError:  # a lone surrogate: not text the model takes either
        return False


def _literal_path(path: str) -> bool:
    """``models.fields.literal_path_problem`` finds nothing (the path byte limit included)."""
    if not _one_line(path, _PATH_BYTES) or path[0] == "/" or "\\" in path:
        return False
    if not _GLOB.isdisjoint(path):
        return False
    if path[1:2] == ":" and path[0].isascii() and path[0].isalpha():
        return False  # a drive: C:...
    wrapped = f"/{path}/"  # an empty, '.' or '..' part
    return "//" not in wrapped and "/./" not in wrapped and "/../" not in wrapped


def _identifier(value: str) -> bool:
    return (
        _IDENTIFIER_CHARS[0] <= len(value) <= _IDENTIFIER_CHARS[1]
        and value.isascii()
        and value.replace("_", "a").isalnum()
    )


def _keyword_group(group: tuple[str, ...]) -> bool:
    if not _GROUP_TERMS[0] <= len(group) <= _GROUP_TERMS[1] or len(set(group)) != len(group):
        return False
    low, high = _KEYWORD_CHARS
    for term in group:  # [a-z0-9], within the length limits, and not too broad
        if not (low <= len(term) <= high and term.isascii() and term.isalnum()):
            return False
        if not (term.islower() or term.isdigit()) or term in BROAD_WORDS:
            return False
    return True


def _entries(value: object, limit: int) -> tuple[str, ...] | None:
    """``value`` as a tuple of at most ``limit`` unique strings, or None."""
    if not isinstance(value, list) or len(value) > limit:
        return None
    for item in value:
        if not isinstance(item, str):
            return None
    return tuple(value) if len(set(value)) == len(value) else None


def _lesson_id(value: str) -> bool:
    """``lesson-<ULID>``, as ``models.ids.lesson_id_problem`` takes it."""
    return (
        len(value) == 33 and value.startswith("lesson-") and _LESSON_ID_CHARS.issuperset(value[7:])
    )


class _JsonOptions:
    """``json.loads``'s defaults, for the C scanner: NaN and the infinities read as floats,
    a repeated key keeps its last value."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # "NaN", "Infinity", "-Infinity": what json.loads makes of them


_JSON_SPACE = " \t\n\r"
try:  # json.loads's own C scanner, without the json package and the ``re`` its decoder loads
    from _json import make_scanner
except ImportError:  # an interpreter without CPython's accelerator
    _SCAN = None
else:
    _SCAN = make_scanner(_JsonOptions)  # type: ignore[arg-type]


def _json_loads(text: str) -> object:
    """``json.loads(text)`` for a ``str``, through the C scanner it uses itself but without its
    Python wrapper: about half of a row's decoding. Raises ValueError or StopIteration where
    json.loads raises (a leading byte-order mark is not whitespace: refused as there)."""
    if _SCAN is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    value, end = _SCAN(text, start)
    if text[end:].strip(_JSON_SPACE):
        raise ValueError("extra data after the JSON document")
    return value


def decode_card(
    lesson_id: object, revision: object, body: object, repository: str
) -> StoredCard | None:
    """A live row of ``repository`` as a card; None when the store would refuse it.

    The checks are the card model's own rules (``models.lessons.Card``, ``models.fields``),
    written with the standard library alone: the shape and types, no unknown field, one-line
    title and recommendation within their UTF-8 byte limits, literal paths within theirs,
    whole identifiers, keyword groups, entry counts and uniqueness, at least one association.
    """
    if not isinstance(lesson_id, str) or not _lesson_id(lesson_id):
        return None
    if type(revision) is not int or revision < 1:
        return None
    if not isinstance(body, str):
        return None
    try:
        card: Any = _json_loads(body)
    except (ValueError, RecursionError, StopIteration):
        return None
    try:
        return _card(lesson_id, revision, card, repository)
    except (TypeError, ValueError):  # not expected; one odd row must not silence the others
        return None


def _card(lesson_id: str, revision: int, card: Any, repository: str) -> StoredCard | None:
    if not isinstance(card, dict) or not _CARD_KEYS.issuperset(card):
        return None
    title, recommendation, scope = card.get("title"), card.get("recommendation"), card.get("scope")
    if not isinstance(title, str) or not _one_line(title, LIMITS.title_bytes):
        return None
    if not isinstance(recommendation, str):
        return None
    if not _one_line(recommendation, LIMITS.recommendation_bytes):
        return None
    if not isinstance(scope, dict) or scope.get("kind") != "repository":
        return None
    if not _SCOPE_KEYS.issuperset(scope):
        return None
    if scope.get("repository") != repository:
        return None  # the indexed column and the body disagree: trust neither
    files = _entries(scope.get("files"), LIMITS.files)
    folders = _entries(scope.get("folders"), LIMITS.folders)
    identifiers = _entries(scope.get("identifiers"), LIMITS.identifiers)
    raw_groups = scope.get("keyword_groups")
    if files is None or folders is None or identifiers is None:
        return None
    if not isinstance(raw_groups, list) or len(raw_groups) > LIMITS.keyword_groups:
        return None
    if not all(map(_literal_path, files)) or not all(map(_literal_path, folders)):
        return None
    if not all(map(_identifier, identifiers)):
        return None
    groups = tuple(_entries(group, LIMITS.keyword_group_max_terms) for group in raw_groups)
    keyword_groups = tuple(group for group in groups if group is not None)
    if len(keyword_groups) != len(groups) or not all(map(_keyword_group, keyword_groups)):
        return None
    if not (files or folders or identifiers or keyword_groups):
        return None  # a repository lesson needs at least one association
    stored = StoredScope(repository, files, folders, identifiers, keyword_groups)
    return StoredCard(lesson_id, revision, title, recommendation, stored)


def row_checksum(row: Sequence[object]) -> str:
    """The checksum of a ``LIVE_COLUMNS`` row: 128-bit BLAKE2b over its columns, NUL-joined.

    No column can contain NUL (JSON escapes it; ids, keys and node ids refuse control
    characters). A NULL column reads as ``None``, which no repository key, graph hash or id can
    spell, and a graph row's node id is never NULL (a schema CHECK), so distinct rows never
    share an input. Defined here, standard library only, so the writers (through
    ``store.checked_rows``) and this fallback hash the same text with the same code.
    """
    from _blake2 import blake2b  # hashlib's own C type, without hashlib's OpenSSL import

    lesson_id, revision, body, evidence, kind, repository, graph_hash, node_id = row
    text = (
        f"{lesson_id}\0{revision}\0{body}\0{evidence}\0"
        f"{kind}\0{repository}\0{graph_hash}\0{node_id}"
    )
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def checksum_matches(row: tuple[object, ...]) -> bool:
    """Whether a ``LIVE_COLUMNS, checksum`` row matches its writer's checksum. A row without a
    checksum never matches."""
    *columns, stored = row
    return isinstance(stored, str) and row_checksum(columns) == stored


def _file_uri(path: str) -> str:
    """A ``file:`` URI for SQLite, percent-encoded (``?`` and ``#`` would end the path)."""
    text = path.replace(os.sep, "/")
    if not text.startswith("/"):
        text = "/" + text  # a drive path: file:///C:/...
    return "file://" + "".join(
        chr(byte) if byte in _URI_SAFE else f"%{byte:02X}" for byte in os.fsencode(text)
    )


def _unavailable(path: str, reason: str) -> Exception:
    """A StoreUnavailable for the store at ``path``: the exception tree is imported only where
    one is raised, as the fallback's first call never needs it (about 0.9 ms)."""
    from active_memory.errors import StoreUnavailable

    return StoreUnavailable(path, reason)


def _inspect(path: str) -> os.stat_result:
    """The store file's stat, when it is one this user alone may use; else StoreUnavailable."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise _unavailable(path, f"cannot be inspected ({error.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise _unavailable(path, "is not a regular file (a symbolic link is refused too)")
    if _POSIX and (info.st_uid != os.geteuid() or info.st_mode & 0o077):
        raise _unavailable(path, "must be owned by you and private (mode 0600)")
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError as error:
        raise _unavailable(path, f"cannot be read ({error.strerror})") from None
    try:
        header = os.read(descriptor, len(_HEADER))
    finally:
        os.close(descriptor)
    if header != _HEADER:
        raise _unavailable(path, "is not an SQLite database")
    return info


class StoreRows(Closing):
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
            raise _unavailable(self.path, f"cannot be opened by SQLite ({error})") from None
        try:
            self._conn.execute("PRAGMA trusted_schema = OFF")
            now = os.lstat(self.path)
            if (now.st_dev, now.st_ino) != self._file:
                raise _unavailable(self.path, "was replaced while opening")
            names = [row[0] for row in self._conn.execute(
                "SELECT name FROM schema_migrations ORDER BY seq")]  # fmt: skip
            if not readable_schema(names):
                raise _unavailable(self.path, f"has schema {names!r}, not the one read here")
        except (OSError, _sqlite3.Error) as error:
            self._conn.close()
            raise _unavailable(self.path, f"cannot be read ({error})") from None
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
            raise _unavailable(self.path, f"cannot be read ({error})") from None

    def repository_cards(self, repository: str) -> tuple[StoreStamp, tuple[StoredCard, ...]]:
        """The stamp and the live cards of ``repository`` by id, read in one transaction;
        rows that do not decode are left out."""
        try:
            self._conn.execute("BEGIN")
            try:
                stamp = self._stamp()
                rows = self._conn.execute(
                    "SELECT id, revision, body, evidence, kind, repository, graph_hash, node_id, "
                    "checksum FROM records WHERE kind = 'repository' AND deleted = 0 "
                    "AND repository = ? ORDER BY id",
                    (repository,),
                ).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        except _sqlite3.Error as error:
            raise _unavailable(self.path, f"cannot be read ({error})") from None
        cards = (decode_card(row[0], row[1], row[2], repository)
                 for row in rows if checksum_matches(row))  # fmt: skip
        return stamp, tuple(card for card in cards if card is not None)

    def close(self) -> None:
        self._conn.close()
