"""The errors of every layer but the model providers' (see :mod:`active_memory.errors` for the
tree)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ActiveMemoryError",
    "AdmissionError",
    "AnswerRefused",
    "ConfigError",
    "ContractViolation",
    "EvidenceCancelled",
    "EvidenceError",
    "ImportConflict",
    "InputRefused",
    "LessonNotFound",
    "LessonRetired",
    "LessonValidationError",
    "MalformedAnswer",
    "ModelRefused",
    "PostmortemError",
    "PromptError",
    "ProvenanceError",
    "PublicationError",
    "PublicationFenced",
    "QuarantineNotFound",
    "RecallError",
    "RepetitiveOutput",
    "RevisionConflict",
    "RevisionMismatch",
    "RunLogError",
    "RunRecordError",
    "ScopeRefused",
    "ScreenRefused",
    "SessionCancelled",
    "SnapshotError",
    "StoreError",
    "StoreUnavailable",
    "WriteInterrupted",
]


def _first(items: Sequence[str], count: int, separator: str = "; ") -> str:
    """The first ``count`` of ``items`` joined, then how many more there are: a message quotes
    a long list in part."""
    more = f" (+{len(items) - count} more)" if len(items) > count else ""
    return separator.join(items[:count]) + more


class ActiveMemoryError(Exception):
    """Root of every error raised on purpose by active-memory."""


class ConfigError(ActiveMemoryError):
    """A runtime configuration section is invalid."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class LessonValidationError(ActiveMemoryError):
    """A lesson field breaks one of the card rules; names the field and the limit."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class InputRefused(ActiveMemoryError):
    """An input was refused before it was parsed: not a regular file, too large, not UTF-8,
    JSON nested too deep or a number too long. ``what`` names the input (a quoted path,
    "standard input", "line 3"); ``problem`` says what is wrong and what to do."""

    def __init__(self, what: str, problem: str) -> None:
        self.what = what
        self.problem = problem
        super().__init__(f"{what} {problem}")


class StoreError(ActiveMemoryError):
    """The lesson store could not do what was asked."""


class StoreUnavailable(StoreError):
    """The store path cannot be opened as a private active-memory SQLite database."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"lesson store {path!r}: {problem}")


class SnapshotError(StoreError):
    """A scoped snapshot could not be read completely."""


class PublicationError(StoreError):
    """A checked batch was refused before or while it was written; nothing was committed."""


class RevisionMismatch:
    """One conflicting mutation: the revision it expected and the one the store holds.

    ``found`` is 0 when the id does not exist; ``tombstoned`` says the id was retired. A plain
    value class rather than a dataclass: the hook path imports this module on every tool call,
    and ``dataclasses`` alone costs more than the rest of that call.
    """

    __slots__ = ("expected", "found", "id", "tombstoned")

    def __init__(self, id: str, expected: int, found: int, tombstoned: bool = False) -> None:
        self.id = id
        self.expected = expected
        self.found = found
        self.tombstoned = tombstoned

    def _fields(self) -> tuple[str, int, int, bool]:
        return (self.id, self.expected, self.found, self.tombstoned)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RevisionMismatch):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"RevisionMismatch(id={self.id!r}, expected={self.expected!r}, "
            f"found={self.found!r}, tombstoned={self.tombstoned!r})"
        )

    def describe(self) -> str:
        state = " (retired)" if self.tombstoned else ""
        return f"{self.id} expected revision {self.expected}, found {self.found}{state}"


class RevisionConflict(PublicationError):
    """At least one mutation named a revision the store no longer holds; the batch failed."""

    def __init__(self, mismatches: Sequence[RevisionMismatch]) -> None:
        self.mismatches = tuple(mismatches)
        listed = "; ".join(m.describe() for m in self.mismatches)
        super().__init__(
            f"revision conflict, nothing published: {listed}. "
            "Refresh the snapshot and decide again."
        )


class ImportConflict(PublicationError):
    """Imported lines collide with stored lessons (retired ids, different content)."""

    def __init__(self, conflicts: Sequence[tuple[str, str]]) -> None:
        self.conflicts = tuple(conflicts)
        shown = _first([f"{lesson_id} {problem}" for lesson_id, problem in self.conflicts], 10)
        super().__init__(f"import refused, nothing was imported: {shown}")


class ScreenRefused(PublicationError):
    """A draft of the batch trips the secret or injection screen; nothing was written.

    ``drafts`` pairs each refused lesson id with its ``stage:code`` tokens
    (``secret:github_token``), in batch order. The message names ids and codes, never the text,
    so it can be logged and sent to a client without repeating a secret or a planted instruction.
    """

    def __init__(self, drafts: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.drafts = tuple((lesson_id, tuple(codes)) for lesson_id, codes in drafts)
        shown = "; ".join(f"{lesson_id} ({', '.join(codes)})" for lesson_id, codes in self.drafts)
        super().__init__(
            f"publication refused by the admission screen, nothing published: {shown}. "
            "Remove the secret or the instruction from those lessons and publish again"
        )


class PublicationFenced(StoreError):
    """Publication was cancelled or its deadline passed before the write was dispatched."""


class WriteInterrupted(StoreError):
    """A write was stopped and rolled back while it waited for or held the writers' lock: it
    held the lock past its bound, or the client that asked for it went away. ``reason`` says
    which; nothing was committed, and retrying later is safe."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: interrupted ({reason}); nothing was committed, retry later")


class ScopeRefused(StoreError):
    """A request reaches outside the scope its credential was issued for; nothing was done.

    ``what`` names the lesson or the run field; ``scope`` describes the credential's scope."""

    def __init__(self, what: str, scope: str) -> None:
        self.what = what
        self.scope = scope
        super().__init__(
            f"{what} is outside this credential's scope ({scope}); nothing was read or written"
        )


class QuarantineNotFound(StoreError):
    def __init__(self, lesson_id: str) -> None:
        self.lesson_id = lesson_id
        super().__init__(
            f"no quarantined proposal {lesson_id!r}; `active-memory lessons review list` lists them"
        )


class LessonNotFound(StoreError):
    """``hint`` replaces the default advice (a local store's listing command) where it does
    not apply, as for a remote service."""

    def __init__(self, lesson_id: str, hint: str | None = None) -> None:
        self.lesson_id = lesson_id
        advice = "`active-memory lessons list`" if hint is None else hint
        super().__init__(f"no lesson {lesson_id!r} in this store; {advice}")


class LessonRetired(LessonNotFound):
    """The id exists only as a tombstone; its history may still be read."""

    def __init__(self, lesson_id: str, revision: int) -> None:
        self.revision = revision
        StoreError.__init__(
            self,
            f"lesson {lesson_id!r} was retired at revision {revision}; "
            f"`active-memory lessons history {lesson_id}` shows its past",
        )
        self.lesson_id = lesson_id


class RunRecordError(ActiveMemoryError):
    """A run record is malformed; ``path`` locates the bad field (e.g. ``executions[3].node``),
    ``$`` the whole file (then left out of the message: the source names it already)."""

    def __init__(self, path: str, problem: str, *, source: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.source = source
        parts = [part for part in (source, None if path == "$" else path) if part]
        super().__init__(": ".join([*parts, problem]))


class EvidenceError(ActiveMemoryError):
    """Evidence could not be built (unreadable history, cancelled, bad budget)."""


class EvidenceCancelled(EvidenceError):
    """Reading history stopped between two pages because cancellation was requested."""

    def __init__(self, where: str) -> None:
        self.where = where
        super().__init__(f"cancelled while reading history {where!r}; nothing was built")


class ContractViolation(ActiveMemoryError):
    """A specialist answer does not satisfy its JSON contract."""

    def __init__(self, contract: str, errors: Sequence[str]) -> None:
        self.contract = contract
        self.errors = tuple(errors)
        super().__init__(f"answer does not satisfy contract {contract!r}: {_first(self.errors, 5)}")


class MalformedAnswer(ContractViolation):
    """The answer was not JSON at all, even after the repair turn."""


class RepetitiveOutput(ContractViolation):
    """The model wrote one span over and over until its turn's output cap, also after the
    repair turn that said so. ``count`` is how often the span occurred, ``cap`` the turn's
    output cap; ``errors`` holds the description of the span (model text: never reported)."""

    def __init__(self, contract: str, description: str, count: int, cap: int) -> None:
        self.count = count
        self.cap = cap
        super().__init__(contract, (f"the reply repeated {description} until the {cap}-token cap",))
        ActiveMemoryError.__init__(
            self,
            f"the {contract!r} reply repeated one span {count} times until its {cap}-token "
            "output cap, also after the repair turn that said so",
        )


class ModelRefused(ActiveMemoryError):
    """The model declined to answer (a refusal stop); no repair turn is spent on it."""

    def __init__(self, contract: str, turn: int) -> None:
        self.contract = contract
        self.turn = turn
        super().__init__(
            f"the model refused to give a {contract!r} answer (a refusal stop on turn {turn})"
        )


class PromptError(ActiveMemoryError):
    """A prompt is unknown, or rendering it lacks a value, got an unknown one, or is malformed.

    ``placeholders`` names the offending placeholders (empty when the prompt itself is unknown).
    """

    def __init__(self, prompt: str, problem: str, placeholders: Sequence[str] = ()) -> None:
        self.prompt = prompt
        self.problem = problem
        self.placeholders = tuple(placeholders)
        super().__init__(f"prompt {prompt!r}: {problem}")


class AdmissionError(ActiveMemoryError):
    """The host called admission with inputs that contradict each other.

    This is a host bug (an unknown role, a supplied lesson outside the role's scope, one id
    supplied twice), never a verdict on a specialist's answer: those are rejections.
    """


class ProvenanceError(ActiveMemoryError):
    """A checkout could not be inspected with git."""


class SessionCancelled(ActiveMemoryError):
    """A specialist session stopped because its cancellation token fired."""


class RecallError(ActiveMemoryError):
    """Recall could not serve (broker, signals, hook installation)."""


class RunLogError(ActiveMemoryError):
    """A run log record could not be written, or carried a field outside the allow-list."""


class PostmortemError(ActiveMemoryError):
    """The postmortem cannot start (bad sourceNode, missing latched outcome, …)."""


class AnswerRefused(PostmortemError):
    """Admission refused a specialist's whole answer (its shape or maintenance coverage).

    ``codes`` are the stable ``stage:code`` tokens of the refusal, never answer text. Nothing of
    that specialist publishes: a failing batch fails its whole reconciliation.
    """

    def __init__(self, specialist: str, batch: int, codes: Sequence[str]) -> None:
        self.specialist = specialist
        self.batch = batch
        self.codes = tuple(codes)
        shown = _first(self.codes, 5, separator=", ")
        super().__init__(
            f"{specialist} batch {batch}: admission refused the whole answer ({shown}); "
            "nothing of this specialist was published"
        )
