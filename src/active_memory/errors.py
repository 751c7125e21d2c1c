"""The exception tree of active-memory.

Every error the toolkit raises on purpose derives from :class:`ActiveMemoryError`, so a host
can catch one type. Messages are built here, quote offending values with ``!r`` and say what to
do; attributes carry the same facts for programs.

    ActiveMemoryError
     ├── ConfigError                 runtime JSON sections (activeMemory, globalAgents)
     ├── LessonValidationError       a card, scope or evidence field breaks a limit
     ├── StoreError
     │    ├── StoreUnavailable        path is not a usable private SQLite store
     │    ├── SnapshotError           a scoped read failed (never an empty lesson set)
     │    ├── PublicationError        a checked batch is malformed or over capacity
     │    │    └── RevisionConflict   expected revisions did not match; nothing written
     │    ├── PublicationFenced       cancelled or past the deadline before dispatch
     │    └── LessonNotFound
     ├── RunRecordError              a run record (or transcript) is malformed
     ├── EvidenceError
     ├── ContractViolation           a specialist answer breaks its JSON contract
     ├── AdmissionError              admission was called with inconsistent host inputs
     ├── ProvenanceError             git inspection of a checkout failed
     ├── ProviderError               a model provider failed (SDK errors translated)
     │    ├── ProviderUnavailable     SDK extra or credential missing
     │    ├── ProviderDeadlineExceeded
     │    └── ReplayMismatch          a replayed exchange was unexpected or left over
     ├── RecallError                 broker, hooks, signals
     ├── RunLogError                 the run log cannot be written, or a field is not allowed
     └── PostmortemError             e.g. an unknown or non-agent sourceNode
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ActiveMemoryError",
    "AdmissionError",
    "ConfigError",
    "ContractViolation",
    "EvidenceError",
    "LessonNotFound",
    "LessonValidationError",
    "PostmortemError",
    "ProvenanceError",
    "ProviderDeadlineExceeded",
    "ProviderError",
    "ProviderUnavailable",
    "PublicationError",
    "PublicationFenced",
    "RecallError",
    "ReplayMismatch",
    "RevisionConflict",
    "RevisionMismatch",
    "RunLogError",
    "RunRecordError",
    "SnapshotError",
    "StoreError",
    "StoreUnavailable",
]


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


@dataclass(frozen=True, slots=True)
class RevisionMismatch:
    """One conflicting mutation: the revision it expected and the one the store holds.

    ``found`` is 0 when the id does not exist; ``tombstoned`` says the id was retired.
    """

    id: str
    expected: int
    found: int
    tombstoned: bool = False

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


class PublicationFenced(StoreError):
    """Publication was cancelled or its deadline passed before the write was dispatched."""


class LessonNotFound(StoreError):
    def __init__(self, lesson_id: str) -> None:
        self.lesson_id = lesson_id
        super().__init__(f"no lesson {lesson_id!r} in this store; `active-memory lessons list`")


class RunRecordError(ActiveMemoryError):
    """A run record is malformed; ``path`` locates the bad field (e.g. ``executions[3].node``)."""

    def __init__(self, path: str, problem: str, *, source: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{path}: {problem}")


class EvidenceError(ActiveMemoryError):
    """Evidence could not be built (unreadable history, cancelled, bad budget)."""


class ContractViolation(ActiveMemoryError):
    """A specialist answer does not satisfy its JSON contract."""

    def __init__(self, contract: str, errors: Sequence[str]) -> None:
        self.contract = contract
        self.errors = tuple(errors)
        shown = "; ".join(self.errors[:5])
        more = f" (+{len(self.errors) - 5} more)" if len(self.errors) > 5 else ""
        super().__init__(f"answer does not satisfy contract {contract!r}: {shown}{more}")


class AdmissionError(ActiveMemoryError):
    """The host called admission with inputs that contradict each other.

    This is a host bug (an unknown role, a supplied lesson outside the role's scope, one id
    supplied twice), never a verdict on a specialist's answer: those are rejections.
    """


class ProvenanceError(ActiveMemoryError):
    """A checkout could not be inspected with git."""


class ProviderError(ActiveMemoryError):
    """A model provider failed; SDK exceptions are translated into this in one place each."""


class ProviderUnavailable(ProviderError):
    """The SDK extra or a credential is missing."""


class ProviderDeadlineExceeded(ProviderError):
    """The shared postmortem deadline passed during a provider call."""


class ReplayMismatch(ProviderError):
    """A replayed provider exchange was unexpected, different, or left unconsumed."""


class RecallError(ActiveMemoryError):
    """Recall could not serve (broker, signals, hook installation)."""


class RunLogError(ActiveMemoryError):
    """A run log record could not be written, or carried a field outside the allow-list."""


class PostmortemError(ActiveMemoryError):
    """The postmortem cannot start (bad sourceNode, missing latched outcome, …)."""
