"""The exception tree of active-memory.

Every error the toolkit raises on purpose derives from :class:`ActiveMemoryError`, so a host
can catch one type. Messages are built here, quote offending values with ``!r`` and say what to
do; attributes carry the same facts for programs.

    ActiveMemoryError
     ├── ConfigError                 runtime JSON sections (activeMemory, globalAgents)
     ├── LessonValidationError       a card, scope or evidence field breaks a limit
     ├── InputRefused                a file or stream is not acceptable input (type, size,
     │                               encoding, JSON depth or number length)
     ├── StoreError
     │    ├── StoreUnavailable        path is not a usable private SQLite store
     │    ├── SnapshotError           a scoped read failed (never an empty lesson set)
     │    ├── PublicationError        a checked batch is malformed or over capacity
     │    │    ├── RevisionConflict   expected revisions did not match; nothing written
     │    │    ├── ImportConflict     import lines collide with stored lessons; nothing written
     │    │    └── ScreenRefused      a draft trips the secret or injection screen (codes only)
     │    ├── PublicationFenced       cancelled or past the deadline before dispatch
     │    ├── ScopeRefused            a lesson or run outside the credential's tenant and scope
     │    ├── QuarantineNotFound      no quarantined proposal has that id
     │    └── LessonNotFound
     │         └── LessonRetired      the id is a tombstone
     ├── RunRecordError              a run record (or transcript) is malformed
     ├── EvidenceError
     │    └── EvidenceCancelled       the cancellation token was set between two pages
     ├── ContractViolation           a specialist answer breaks its JSON contract
     │    ├── MalformedAnswer         ... because it is not JSON at all
 │    └── RepetitiveOutput        ... because it repeated one span until its token cap
     ├── ModelRefused                the model declined to answer (a refusal stop)
     ├── PromptError                 a specialist prompt is unknown or cannot be rendered
     ├── AdmissionError              admission was called with inconsistent host inputs
     ├── ProvenanceError             git inspection of a checkout failed
     ├── ProviderError               a model provider failed (SDK errors translated); its
     │    │                           ``cause`` names what failed, ``attempts`` the calls made
     │    ├── ProviderUnavailable     SDK extra or credential missing, credential refused
     │    ├── ProviderDeadlineExceeded  the deadline passed (only then)
     │    │    └── ProviderNoAnswer   …while a call waited: the server sent nothing in time
     │    ├── ProviderTransientError  429, 5xx, overloaded, connection: retried, then raised
     │    └── ReplayMismatch          a replayed exchange was unexpected or left over
     │         └── ReplayChanged      the request differs from the recorded one (names what)
     ├── SessionCancelled            a specialist session's cancellation token fired
     ├── RecallError                 broker, hooks, signals
     ├── RunLogError                 the run log cannot be written, or a field is not allowed
     └── PostmortemError             e.g. an unknown or non-agent sourceNode
          └── AnswerRefused           admission refused a specialist's whole answer
"""

from __future__ import annotations

import time
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
    "ProviderDeadlineExceeded",
    "ProviderError",
    "ProviderNoAnswer",
    "ProviderTransientError",
    "ProviderUnavailable",
    "PublicationError",
    "PublicationFenced",
    "QuarantineNotFound",
    "RecallError",
    "RepetitiveOutput",
    "ReplayChanged",
    "ReplayMismatch",
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


class ProviderError(ActiveMemoryError):
    """A model provider failed; SDK exceptions are translated into this in one place each.

    ``cause`` is a stable code for what failed (``connection_refused``, ``dns_failed``,
    ``tls_failed``, ``auth_failed``, ``rate_limited``, ``server_error``, ``timed_out``, …), the
    one a report and the run log carry; ``attempts`` counts the calls made, so ``retries`` is
    what the retry layer spent before giving up.
    """

    # A plain attribute, not a ClassVar: the hook path imports this module and not typing.
    default_cause = "provider_error"

    def __init__(self, message: str, *, cause: str | None = None, attempts: int = 1) -> None:
        self.cause = cause or self.default_cause
        self.attempts = attempts
        super().__init__(message)

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)


class ProviderUnavailable(ProviderError):
    """The SDK extra or a credential is missing (``provider_unavailable``), or the server
    refused the credential (``auth_failed``)."""

    default_cause = "provider_unavailable"


class ProviderDeadlineExceeded(ProviderError):
    """The shared postmortem deadline passed during a provider call (raised only once it has)."""

    default_cause = "timed_out"


class ProviderNoAnswer(ProviderDeadlineExceeded):
    """The deadline passed while a call waited for its answer: the server at ``host`` sent
    nothing in ``waited`` seconds (a hung server, or one still generating), unlike a model that
    answered every turn but took them all together past the deadline."""

    def __init__(
        self,
        provider: str,
        host: str | None,
        waited: float,
        *,
        context: str = "",
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.host = host
        self.waited = waited
        where = f"{provider} at {host}" if host else provider
        lead = f"{context}: " if context else ""
        super().__init__(f"{lead}{where} did not answer within {waited:.1f} s", attempts=attempts)

    @classmethod
    def of(cls, provider: object, asked_at: float, context: str) -> ProviderNoAnswer:
        """The error of ``provider`` (named by its ``name`` and ``host`` when it has them) for a
        call sent at ``asked_at`` on the :func:`time.monotonic` clock and unanswered now."""
        name = getattr(provider, "name", None)
        host = getattr(provider, "host", None)
        return cls(
            name if isinstance(name, str) else "the provider",
            host if isinstance(host, str) else None,
            time.monotonic() - asked_at,
            context=context,
        )


class ProviderTransientError(ProviderError):
    """A failure worth retrying: rate limit, overload, server error or lost connection.

    Raised to the caller only once the retries are used up (or the next wait would pass the
    deadline); ``retry_after`` is the server's requested wait in seconds when it sent one.
    """

    default_cause = "connection_failed"

    def __init__(
        self,
        provider: str,
        problem: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        cause: str | None = None,
        attempts: int = 1,
    ) -> None:
        self.provider = provider
        self.problem = problem
        self.status = status
        self.retry_after = retry_after
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{provider}: {code}{problem}", cause=cause, attempts=attempts)


class ReplayMismatch(ProviderError):
    """A replayed provider exchange was unexpected, different, or left unconsumed."""

    default_cause = "replay_mismatch"


class ReplayChanged(ReplayMismatch):
    """A replayed request differs from the one recorded: the answers would be stale.

    ``changed`` names what differs (``prompt``, ``contract``, ``model``, ``evidence``,
    ``conversation``, ``settings``); ``part`` is the first differing part of the request.
    """

    def __init__(self, message: str, *, changed: Sequence[str], part: str | None) -> None:
        self.changed = tuple(changed)
        self.part = part
        super().__init__(message)


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
