"""active-memory: lesson memory for multi-agent coding workflows.

The public API is what ``__all__`` lists; everything else is private and may change.

Importing this package stays standard-library only, because the hook helper's store fallback
imports it on every tool call: names whose modules need third-party libraries (jsonschema,
tenacity, the provider SDKs) are resolved lazily on first access.
"""

from __future__ import annotations

import importlib

from active_memory.cancel import CancelToken
from active_memory.config import (
    ActiveMemoryConfig,
    PostmortemConfig,
    RuntimeConfig,
    load_runtime_config,
    parse_runtime_config,
)
from active_memory.errors import (
    ActiveMemoryError,
    AdmissionError,
    AnswerRefused,
    ConfigError,
    ContractViolation,
    EvidenceCancelled,
    EvidenceError,
    ImportConflict,
    LessonNotFound,
    LessonRetired,
    LessonValidationError,
    PostmortemError,
    PromptError,
    ProvenanceError,
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderTransientError,
    ProviderUnavailable,
    PublicationError,
    PublicationFenced,
    RecallError,
    ReplayMismatch,
    RevisionConflict,
    RevisionMismatch,
    RunRecordError,
    SessionCancelled,
    SnapshotError,
    StoreError,
    StoreUnavailable,
)
from active_memory.evidence.builder import EvidenceBundle, build_evidence
from active_memory.host import ActiveRun, open_run
from active_memory.lessons import (
    Decision,
    Evidence,
    GraphScope,
    Lesson,
    LessonDraft,
    Mutation,
    Proposal,
    Publication,
    Rejection,
    RepositoryScope,
    new_lesson_id,
)
from active_memory.runs import (
    Binding,
    Delivery,
    Execution,
    Outcome,
    RunRecord,
    ToolReceipt,
    dump_run_record,
    load_run_record,
)
from active_memory.store.backend import (
    ActiveMemoryBackend,
    PublicationControl,
    PublicationReceipt,
    RunIdentity,
    Snapshot,
    SnapshotRequest,
)
from active_memory.store.paths import default_store_path
from active_memory.store.sqlite import SqliteStore

__version__ = "0.1.0"

# name -> module for names whose modules import third-party libraries (see the docstring).
_LAZY = {
    "AnswerContract": "active_memory.agents.providers",
    "ModelProvider": "active_memory.agents.providers",
    "ModelRequest": "active_memory.agents.providers",
    "ModelResponse": "active_memory.agents.providers",
    "RetryPolicy": "active_memory.agents.providers",
    "Session": "active_memory.agents.session",
    "SessionResult": "active_memory.agents.session",
    "TokenUsage": "active_memory.agents.providers",
    "LessonChange": "active_memory.agents.report",
    "PostmortemReport": "active_memory.agents.report",
    "SpecialistReport": "active_memory.agents.report",
    "create_provider": "active_memory.agents.providers",
    "run_postmortem": "active_memory.agents.postmortem",
    "register_provider": "active_memory.agents.providers",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'active_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ActiveMemoryBackend",
    "ActiveMemoryConfig",
    "ActiveMemoryError",
    "ActiveRun",
    "AdmissionError",
    "AnswerContract",
    "AnswerRefused",
    "Binding",
    "CancelToken",
    "ConfigError",
    "ContractViolation",
    "Decision",
    "Delivery",
    "Evidence",
    "EvidenceBundle",
    "EvidenceCancelled",
    "EvidenceError",
    "Execution",
    "GraphScope",
    "ImportConflict",
    "Lesson",
    "LessonChange",
    "LessonDraft",
    "LessonNotFound",
    "LessonRetired",
    "LessonValidationError",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "Mutation",
    "Outcome",
    "PostmortemConfig",
    "PostmortemError",
    "PostmortemReport",
    "PromptError",
    "Proposal",
    "ProvenanceError",
    "ProviderDeadlineExceeded",
    "ProviderError",
    "ProviderTransientError",
    "ProviderUnavailable",
    "Publication",
    "PublicationControl",
    "PublicationError",
    "PublicationFenced",
    "PublicationReceipt",
    "RecallError",
    "Rejection",
    "ReplayMismatch",
    "RepositoryScope",
    "RetryPolicy",
    "RevisionConflict",
    "RevisionMismatch",
    "RunIdentity",
    "RunRecord",
    "RunRecordError",
    "RuntimeConfig",
    "Session",
    "SessionCancelled",
    "SessionResult",
    "Snapshot",
    "SnapshotError",
    "SnapshotRequest",
    "SpecialistReport",
    "SqliteStore",
    "StoreError",
    "StoreUnavailable",
    "TokenUsage",
    "ToolReceipt",
    "__version__",
    "build_evidence",
    "create_provider",
    "default_store_path",
    "dump_run_record",
    "load_run_record",
    "load_runtime_config",
    "new_lesson_id",
    "open_run",
    "parse_runtime_config",
    "register_provider",
]
