"""Lessons: the card an agent sees, its scope, and the evidence kept beside it.

Every constructor validates its limits (bytes counted in UTF-8) and raises
:class:`~active_memory.errors.LessonValidationError` naming the field and the limit. Rules that
depend on a run or a checkout (references observed in this run, files that exist, source
positions, secrets) belong to admission in ``contracts/validate.py``, not here: legacy cards must
stay readable even when admission would now refuse them.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias
from urllib.parse import urlsplit

from active_memory.errors import LessonValidationError

__all__ = [
    "BROAD_WORDS",
    "LIMITS",
    "Decision",
    "DecisionAction",
    "Evidence",
    "GraphScope",
    "Lesson",
    "LessonDraft",
    "Mutation",
    "Proposal",
    "Publication",
    "Rejection",
    "RepositoryScope",
    "Scope",
    "local_repository_key",
    "new_lesson_id",
    "repository_key_from_remote",
    "scope_from_dict",
]


@dataclass(frozen=True, slots=True)
class _Limits:
    title_bytes: int = 96
    recommendation_bytes: int = 640
    reason_bytes: int = 512
    files: int = 32
    folders: int = 16
    path_bytes: int = 256
    identifiers: int = 32
    identifier_min_chars: int = 3
    identifier_max_chars: int = 128
    keyword_groups: int = 8
    keyword_group_min_terms: int = 2
    keyword_group_max_terms: int = 4
    keyword_min_chars: int = 2
    keyword_max_chars: int = 48
    node_id_bytes: int = 128
    repository_key_bytes: int = 256
    references_min: int = 1
    references_max: int = 8
    reference_bytes: int = 300
    run_id_bytes: int = 128


LIMITS = _Limits()

# Words too broad to retrieve a card on their own, so they may not be keyword terms.
BROAD_WORDS = frozenset(
    {
        "the", "and", "file", "code", "repo", "read", "tool", "files", "write", "tools",
        "repository", "for", "with", "this", "that", "from", "into", "use", "using", "all",
        "any", "not", "src",
    }
)  # fmt: skip

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")
_KEYWORD = re.compile(r"[a-z0-9]+")
_GRAPH_HASH = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_LESSON_ID = re.compile(r"lesson-[0-9A-HJKMNP-TV-Z]{26}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
_GLOB = re.compile(r"[*?\[\]{}]")
_DRIVE = re.compile(r"[A-Za-z]:")
# A path every _literal_path rule accepts: ASCII word segments, none of them '.' or '..'.
_PLAIN_SEGMENT = r"(?!\.\.?(?:/|\Z))[\w.-]+"
_PLAIN_PATH = re.compile(rf"{_PLAIN_SEGMENT}(?:/{_PLAIN_SEGMENT})*", re.ASCII)
# Credential-free repository keys: forge:host[:port]/owner/repo, local:<hex>, repo:<opaque>.
_REPOSITORY_KEY = re.compile(
    r"forge:[a-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~-]+)+"
    r"|local:[0-9a-f]{16,64}"
    r"|repo:[A-Za-z0-9._~/-]+"
)
_REFERENCE = re.compile(r"(exec|receipt|repository|graph|source):(\S.*)")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _one_line(field_name: str, value: object, max_bytes: int, *, allow_empty: bool = False) -> str:
    # Printable ASCII has no control characters and one byte per character, so the common case
    # needs no regex and no encoding; anything else takes the full checks below.
    if (
        type(value) is str
        and value.isascii()
        and value.isprintable()
        and len(value) <= max_bytes
        and (allow_empty or value.strip())
    ):
        return value
    if not isinstance(value, str):
        raise LessonValidationError(field_name, f"must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise LessonValidationError(field_name, "must not be empty")
    if _CONTROL.search(value):
        raise LessonValidationError(field_name, "must be one line without control characters")
    size = _utf8_len(value)
    if size > max_bytes:
        raise LessonValidationError(field_name, f"is {size} UTF-8 bytes; the limit is {max_bytes}")
    return value


def _check_count(field_name: str, items: tuple[Any, ...], maximum: int) -> None:
    if len(items) > maximum:
        raise LessonValidationError(field_name, f"has {len(items)} entries; the limit is {maximum}")


def _check_unique(field_name: str, items: Iterable[str]) -> None:
    if isinstance(items, tuple) and (len(items) < 2 or len(set(items)) == len(items)):
        return
    seen: set[str] = set()
    for item in items:
        if item in seen:
            raise LessonValidationError(field_name, f"repeats {item!r}; entries must be unique")
        seen.add(item)


def _literal_path(field_name: str, value: object) -> str:
    """A literal root-relative path: no globs, no ``..``, no leading slash, no empty parts."""
    path = _one_line(field_name, value, LIMITS.path_bytes)
    if path.startswith("/") or _DRIVE.match(path):
        raise LessonValidationError(field_name, f"{path!r} must be relative to the repository root")
    if "\\" in path:
        raise LessonValidationError(field_name, f"{path!r} must use '/' separators")
    if _GLOB.search(path):
        raise LessonValidationError(field_name, f"{path!r} must be a literal path, not a glob")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise LessonValidationError(
            field_name, f"{path!r} must be normalised (no '', '.' or '..' components)"
        )
    return path


def _tuple_of_str(field_name: str, value: object) -> tuple[str, ...]:
    if type(value) is tuple or type(value) is list:
        for item in value:
            if type(item) is not str:
                break
        else:
            return tuple(value)
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise LessonValidationError(field_name, "must be a list of strings")
    for item in value:
        if not isinstance(item, str):
            raise LessonValidationError(field_name, "must be a list of strings")
    return tuple(value)


def validate_repository_key(field_name: str, value: object) -> str:
    key = _one_line(field_name, value, LIMITS.repository_key_bytes)
    if not _REPOSITORY_KEY.fullmatch(key) or "@" in key or ".." in key:
        raise LessonValidationError(
            field_name,
            f"{key!r} is not a credential-free repository key "
            "(forge:host/owner/repo, local:<hex> or repo:<name>)",
        )
    return key


def repository_key_from_remote(url: str) -> str:
    """Turn a git remote URL into ``forge:host/owner/repo``, dropping any credentials.

    Accepts ``https://user:token@host/owner/repo.git``, ``ssh://git@host:22/owner/repo`` and
    scp-like ``git@host:owner/repo.git``.
    """
    text = url.strip()
    scp = re.fullmatch(r"(?:[^@/\s]+@)?([A-Za-z0-9.-]+):(?!//)([^\s]+)", text)
    if scp and "://" not in text:
        host, path, port = scp.group(1), scp.group(2), None
    else:
        parts = urlsplit(text)
        if not parts.hostname or not parts.path.strip("/"):
            raise LessonValidationError("repository", f"cannot derive a key from remote {url!r}")
        host, path = parts.hostname, parts.path
        port = parts.port if parts.scheme not in ("https", "http", "ssh", "git") else None
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    host = host.lower()
    key = f"forge:{host}{f':{port}' if port else ''}/{path}"
    return validate_repository_key("repository", key)


def local_repository_key(checkout: str | os.PathLike[str]) -> str:
    """A stable key for a checkout without a remote: a hash of its resolved absolute path."""
    resolved = os.path.realpath(os.fspath(checkout))
    return "local:" + hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:32]


def new_lesson_id(now_ms: int | None = None) -> str:
    """A host-assigned ``lesson-<ULID>``: 48-bit millisecond time then 80 random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "lesson-" + "".join(reversed(chars))


def validate_lesson_id(field_name: str, value: object) -> str:
    if not isinstance(value, str) or not _LESSON_ID.fullmatch(value):
        raise LessonValidationError(field_name, f"{value!r} is not a lesson id (lesson-<ULID>)")
    return value


# Field names are built only when a check fails: scopes are re-validated on every snapshot.


def _checked_paths(name: str, value: object, maximum: int) -> tuple[str, ...]:
    where = "scope." + name
    items = _tuple_of_str(where, value)
    _check_count(where, items, maximum)
    limit = LIMITS.path_bytes
    for index, item in enumerate(items):
        # Plain ASCII paths pass every rule; only the others need the full checks.
        if len(item) > limit or not _PLAIN_PATH.fullmatch(item):
            _literal_path(f"{where}[{index}]", item)
    _check_unique(where, items)
    return items


def _checked_identifiers(value: object) -> tuple[str, ...]:
    identifiers = _tuple_of_str("scope.identifiers", value)
    _check_count("scope.identifiers", identifiers, LIMITS.identifiers)
    low, high = LIMITS.identifier_min_chars, LIMITS.identifier_max_chars
    for index, ident in enumerate(identifiers):
        if not (low <= len(ident) <= high) or not _IDENTIFIER.fullmatch(ident):
            raise LessonValidationError(
                f"scope.identifiers[{index}]",
                f"{ident!r} must be {low}-{high} characters of [A-Za-z0-9_]",
            )
    _check_unique("scope.identifiers", identifiers)
    return identifiers


def _checked_keyword_groups(value: object) -> tuple[tuple[str, ...], ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise LessonValidationError("scope.keyword_groups", "must be a list of term lists")
    groups = tuple(
        _tuple_of_str(f"scope.keyword_groups[{i}]", group) for i, group in enumerate(value)
    )
    _check_count("scope.keyword_groups", groups, LIMITS.keyword_groups)
    low, high = LIMITS.keyword_group_min_terms, LIMITS.keyword_group_max_terms
    lo, hi = LIMITS.keyword_min_chars, LIMITS.keyword_max_chars
    for gi, group in enumerate(groups):
        if not (low <= len(group) <= high):
            raise LessonValidationError(
                f"scope.keyword_groups[{gi}]",
                f"has {len(group)} terms; a group needs {low} to {high}",
            )
        for term in group:
            if not (lo <= len(term) <= hi) or not _KEYWORD.fullmatch(term):
                raise LessonValidationError(
                    f"scope.keyword_groups[{gi}]",
                    f"term {term!r} must be {lo}-{hi} characters of [a-z0-9]",
                )
            if term in BROAD_WORDS:
                raise LessonValidationError(
                    f"scope.keyword_groups[{gi}]",
                    f"term {term!r} is too broad to retrieve a card; use specific terms",
                )
        _check_unique(f"scope.keyword_groups[{gi}]", group)
    return groups


@dataclass(frozen=True, slots=True)
class RepositoryScope:
    """A repository lesson: associations that retrieve it when a tool call touches them."""

    kind: ClassVar[Literal["repository"]] = "repository"
    repository: str
    files: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    keyword_groups: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        validate_repository_key("scope.repository", self.repository)
        set_field = object.__setattr__
        set_field(self, "files", _checked_paths("files", self.files, LIMITS.files))
        set_field(self, "folders", _checked_paths("folders", self.folders, LIMITS.folders))
        set_field(self, "identifiers", _checked_identifiers(self.identifiers))
        set_field(self, "keyword_groups", _checked_keyword_groups(self.keyword_groups))
        if not (self.files or self.folders or self.identifiers or self.keyword_groups):
            raise LessonValidationError(
                "scope",
                "a repository lesson needs at least one file, folder, identifier or keyword group",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "repository": self.repository,
            "files": list(self.files),
            "folders": list(self.folders),
            "identifiers": list(self.identifiers),
            "keyword_groups": [list(group) for group in self.keyword_groups],
        }


@dataclass(frozen=True, slots=True)
class GraphScope:
    """A graph lesson: procedural guidance for one node of one authored graph version."""

    kind: ClassVar[Literal["graph"]] = "graph"
    graph_hash: str
    node_id: str
    repository: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.graph_hash, str) or not _GRAPH_HASH.fullmatch(self.graph_hash):
            raise LessonValidationError(
                "scope.graph_hash", f"{self.graph_hash!r} must be 64 lowercase hex characters"
            )
        _one_line("scope.node_id", self.node_id, LIMITS.node_id_bytes)
        if self.repository is not None:
            validate_repository_key("scope.repository", self.repository)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "graph_hash": self.graph_hash,
            "node_id": self.node_id,
            "repository": self.repository,
        }


Scope: TypeAlias = RepositoryScope | GraphScope


def _object(data: object, where: str) -> Mapping[str, Any]:
    # Checked before anything looks at keys: a number has none, a list's items are not fields.
    if not isinstance(data, Mapping):
        raise LessonValidationError(where or "lesson", f"must be an object, got {_json_type(data)}")
    return data


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return type(value).__name__


def _require(data: Mapping[str, Any], key: str, where: str) -> Any:
    if type(data) is not dict:
        _object(data, where)
    if key not in data:
        raise LessonValidationError(f"{where}.{key}" if where else key, "is required")
    return data[key]


def _reject_unknown(data: Mapping[str, Any], allowed: Set[str], where: str) -> None:
    if data.keys() <= allowed:
        return
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise LessonValidationError(
            where or "lesson", f"unknown field(s) {unknown}; allowed: {sorted(allowed)}"
        )


_REPOSITORY_SCOPE_KEYS = frozenset(
    {"kind", "repository", "files", "folders", "identifiers", "keyword_groups"}
)
_GRAPH_SCOPE_KEYS = frozenset({"kind", "graph_hash", "node_id", "repository"})
_EVIDENCE_KEYS = frozenset({"run_id", "references", "reason", "source_commit"})


def scope_from_dict(data: Mapping[str, Any]) -> Scope:
    kind = _require(_object(data, "scope"), "kind", "scope")
    if kind == "repository":
        if data.keys() == _REPOSITORY_SCOPE_KEYS:
            # Every field present and none unknown (what the store writes): the constructor's
            # checks are all that is left.
            return RepositoryScope(
                data["repository"],
                data["files"],
                data["folders"],
                data["identifiers"],
                data["keyword_groups"],
            )
        _reject_unknown(data, _REPOSITORY_SCOPE_KEYS, "scope")
        return RepositoryScope(
            repository=_require(data, "repository", "scope"),
            files=data.get("files", ()),
            folders=data.get("folders", ()),
            identifiers=data.get("identifiers", ()),
            keyword_groups=data.get("keyword_groups", ()),
        )
    if kind == "graph":
        _reject_unknown(data, _GRAPH_SCOPE_KEYS, "scope")
        return GraphScope(
            graph_hash=_require(data, "graph_hash", "scope"),
            node_id=_require(data, "node_id", "scope"),
            repository=data.get("repository"),
        )
    raise LessonValidationError("scope.kind", f"{kind!r} must be 'repository' or 'graph'")


def validate_reference(field_name: str, value: object) -> str:
    ref = _one_line(field_name, value, LIMITS.reference_bytes)
    if not _REFERENCE.fullmatch(ref):
        raise LessonValidationError(
            field_name,
            f"{ref!r} must be exec:<id>, receipt:<seq>, repository:<path>, graph:<node> "
            "or source:<commit>",
        )
    return ref


@dataclass(frozen=True, slots=True)
class Evidence:
    """Why a lesson exists: stored beside the card, never injected into an agent."""

    run_id: str
    references: tuple[str, ...]
    reason: str
    source_commit: str | None = None

    def __post_init__(self) -> None:
        _one_line("evidence.run_id", self.run_id, LIMITS.run_id_bytes)
        refs = _tuple_of_str("evidence.references", self.references)
        object.__setattr__(self, "references", refs)
        low, high = LIMITS.references_min, LIMITS.references_max
        if not (low <= len(refs) <= high):
            raise LessonValidationError(
                "evidence.references", f"has {len(refs)} entries; {low} to {high} are required"
            )
        limit = LIMITS.reference_bytes
        for index, ref in enumerate(refs):
            # Printable ASCII within the limit is one line of that many bytes; the rest (and any
            # failure) goes through validate_reference for its exact message.
            if not (
                len(ref) <= limit
                and ref.isascii()
                and ref.isprintable()
                and _REFERENCE.fullmatch(ref)
            ):
                validate_reference(f"evidence.references[{index}]", ref)
        _check_unique("evidence.references", refs)
        _one_line("evidence.reason", self.reason, LIMITS.reason_bytes)
        if self.source_commit is not None and (
            not isinstance(self.source_commit, str) or not _COMMIT.fullmatch(self.source_commit)
        ):
            raise LessonValidationError(
                "evidence.source_commit",
                f"{self.source_commit!r} must be a full lowercase hex commit id or null",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "references": list(self.references),
            "reason": self.reason,
            "source_commit": self.source_commit,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        _object(data, "evidence")
        if data.keys() == _EVIDENCE_KEYS:
            return cls(data["run_id"], data["references"], data["reason"], data["source_commit"])
        _reject_unknown(data, _EVIDENCE_KEYS, "evidence")
        return cls(
            run_id=_require(data, "run_id", "evidence"),
            references=_require(data, "references", "evidence"),
            reason=_require(data, "reason", "evidence"),
            source_commit=data.get("source_commit"),
        )


def _check_content(scope: object, title: object, recommendation: object, evidence: object) -> None:
    """The rules a draft and a stored lesson share, kept in one place so both hold the same."""
    if not isinstance(scope, (RepositoryScope, GraphScope)):
        raise LessonValidationError("scope", "must be a RepositoryScope or GraphScope")
    if not isinstance(evidence, Evidence):
        raise LessonValidationError("evidence", "must be an Evidence")
    _one_line("title", title, LIMITS.title_bytes)
    _one_line("recommendation", recommendation, LIMITS.recommendation_bytes)


@dataclass(frozen=True, slots=True)
class LessonDraft:
    """A lesson's content before the host gives it an id and a revision."""

    scope: Scope
    title: str
    recommendation: str
    evidence: Evidence

    def __post_init__(self) -> None:
        _check_content(self.scope, self.title, self.recommendation, self.evidence)

    def card_dict(self) -> dict[str, Any]:
        """The injected part (title, recommendation, scope), without evidence."""
        return {
            "title": self.title,
            "recommendation": self.recommendation,
            "scope": self.scope.to_dict(),
        }

    def to_dict(self) -> dict[str, Any]:
        return {**self.card_dict(), "evidence": self.evidence.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LessonDraft:
        _object(data, "lesson")
        _reject_unknown(data, {"title", "recommendation", "scope", "evidence"}, "")
        return cls(
            scope=scope_from_dict(_require(data, "scope", "")),
            title=_require(data, "title", ""),
            recommendation=_require(data, "recommendation", ""),
            evidence=Evidence.from_dict(_require(data, "evidence", "")),
        )


@dataclass(frozen=True, slots=True)
class Lesson:
    """A stored lesson: host-assigned id, host-owned revision (≥ 1), and its content."""

    id: str
    revision: int
    scope: Scope
    title: str
    recommendation: str
    evidence: Evidence

    def __post_init__(self) -> None:
        validate_lesson_id("id", self.id)
        if isinstance(self.revision, bool) or not isinstance(self.revision, int):
            raise LessonValidationError("revision", "must be an integer")
        if self.revision < 1:
            raise LessonValidationError("revision", f"is {self.revision}; revisions start at 1")
        _check_content(self.scope, self.title, self.recommendation, self.evidence)

    @property
    def key(self) -> str:
        """``id@revision``: what the exposure ledger and delivery manifest record."""
        return f"{self.id}@{self.revision}"

    @property
    def draft(self) -> LessonDraft:
        return LessonDraft(self.scope, self.title, self.recommendation, self.evidence)

    @classmethod
    def from_draft(cls, lesson_id: str, revision: int, draft: LessonDraft) -> Lesson:
        return cls(lesson_id, revision, draft.scope, draft.title, draft.recommendation,
                   draft.evidence)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "revision": self.revision, **self.draft.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lesson:
        body = {k: v for k, v in _object(data, "lesson").items() if k not in ("id", "revision")}
        draft = LessonDraft.from_dict(body)
        return cls.from_draft(_require(data, "id", ""), _require(data, "revision", ""), draft)


DecisionAction: TypeAlias = Literal["keep", "adapt", "retire", "defer"]
_ACTIONS = ("keep", "adapt", "retire", "defer")


@dataclass(frozen=True, slots=True)
class Decision:
    """A maintenance specialist's verdict on one supplied lesson.

    The host binds ``id`` to the frozen revision it supplied; models never return revisions.
    ``replacement`` is required for ``adapt`` and forbidden otherwise.
    """

    id: str
    action: DecisionAction
    reason: str
    references: tuple[str, ...] = ()
    replacement: LessonDraft | None = None

    def __post_init__(self) -> None:
        validate_lesson_id("decision.id", self.id)
        if self.action not in _ACTIONS:
            raise LessonValidationError("decision.action", f"{self.action!r} not in {_ACTIONS}")
        _one_line("decision.reason", self.reason, LIMITS.reason_bytes)
        refs = _tuple_of_str("decision.references", self.references)
        object.__setattr__(self, "references", refs)
        _check_count("decision.references", refs, LIMITS.references_max)
        if (self.action == "adapt") != (self.replacement is not None):
            raise LessonValidationError(
                "decision.replacement", "is required for 'adapt' and only for 'adapt'"
            )


@dataclass(frozen=True, slots=True)
class Proposal:
    """A discovery specialist's new lesson, before admission."""

    draft: LessonDraft
    node_id: str | None = None
    repository_specific: bool = True


@dataclass(frozen=True, slots=True)
class Rejection:
    """One admission refusal. Never carries the lesson text, so it is safe to log."""

    stage: str
    role: str
    code: str
    index: int
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "role": self.role,
            "code": self.code,
            "index": self.index,
            "id": self.id,
        }


@dataclass(frozen=True, slots=True)
class Mutation:
    """One change in a checked batch.

    ``upsert`` with ``expected_revision == 0`` creates ``id``; otherwise it replaces the live
    revision it names. ``retire`` tombstones the id at the revision it names. The host assigns
    the next revision; callers never choose one.
    """

    op: Literal["upsert", "retire"]
    id: str
    expected_revision: int
    draft: LessonDraft | None = None

    def __post_init__(self) -> None:
        validate_lesson_id("mutation.id", self.id)
        if self.op not in ("upsert", "retire"):
            raise LessonValidationError("mutation.op", f"{self.op!r} must be upsert or retire")
        if isinstance(self.expected_revision, bool) or not isinstance(self.expected_revision, int):
            raise LessonValidationError("mutation.expected_revision", "must be an integer")
        if self.expected_revision < 0:
            raise LessonValidationError("mutation.expected_revision", "must be 0 or more")
        if self.op == "upsert" and self.draft is None:
            raise LessonValidationError("mutation.draft", "an upsert needs a draft")
        if self.op == "retire" and (self.draft is not None or self.expected_revision == 0):
            raise LessonValidationError(
                "mutation", "a retire names an existing revision (≥ 1) and carries no draft"
            )


@dataclass(frozen=True, slots=True)
class Publication:
    """A checked batch: every mutation commits together or none does."""

    run_id: str
    mutations: tuple[Mutation, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "mutations", tuple(self.mutations))
        _check_unique("publication.mutations", (m.id for m in self.mutations))
