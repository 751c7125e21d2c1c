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
     │    ├── WriteInterrupted        stopped under the writers' lock (held too long, client
     │    │                           gone); rolled back
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
     │    │    └── HarnessUnavailable  a harness lane's CLI missing, too old or logged out
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

from active_memory.errors import core, providers
from active_memory.errors.core import *  # noqa: F403
from active_memory.errors.providers import *  # noqa: F403

__all__ = [*core.__all__, *providers.__all__]
