"""active-memory: lesson memory for multi-agent coding workflows.

The public API is what ``__all__`` lists; everything else is private and may change.

Every public name is imported on first access (PEP 562), not when the package is imported:
the hook helper's console script and its store fallback import this package on every tool call
of an agent, so ``import active_memory`` must cost next to nothing and load no third-party
library. Type checkers see ordinary imports.
"""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing (a measurable share of a hook call's start-up);
# type checkers treat the name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.agents.providers import (
        AnswerContract,
        ModelProvider,
        ModelRequest,
        ModelResponse,
        RetryPolicy,
        TokenUsage,
        create_provider,
        register_provider,
    )
    from active_memory.agents.tool_loop import (
        Session,
        SessionResult,
    )
    from active_memory.cancel import (
        CancelToken,
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
        InputRefused,
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
        ScopeRefused,
        SessionCancelled,
        SnapshotError,
        StoreError,
        StoreUnavailable,
    )
    from active_memory.evidence.builder import (
        EvidenceBundle,
        build_evidence,
    )
    from active_memory.host import (
        ActiveRun,
        HarnessWiring,
        open_backend,
        open_run,
    )
    from active_memory.models.changes import Decision, Mutation, Proposal, Publication, Rejection
    from active_memory.models.config import (
        ActiveMemoryConfig,
        PostmortemConfig,
        RuntimeConfig,
        load_runtime_config,
        parse_runtime_config,
    )
    from active_memory.models.ids import new_lesson_id
    from active_memory.models.lessons import (
        Card,
        Evidence,
        GraphScope,
        Lesson,
        LessonDraft,
        RepositoryScope,
    )
    from active_memory.models.runs import (
        AuthoredGraph,
        Binding,
        Checkout,
        Delivery,
        Execution,
        GraphNode,
        Outcome,
        RunRecord,
        ToolReceipt,
        dump_run_record,
        load_run_record,
    )
    from active_memory.postmortem.binding import BindingOverride
    from active_memory.postmortem.entry import (
        run_postmortem,
    )
    from active_memory.postmortem.options import PostmortemOptions
    from active_memory.postmortem.report import (
        LessonChange,
        PostmortemReport,
        SpecialistReport,
    )
    from active_memory.postmortem.specialist_trial import try_specialist
    from active_memory.store.backend import (
        ActiveMemoryBackend,
        PublicationControl,
        PublicationReceipt,
        RunIdentity,
        Snapshot,
        SnapshotRequest,
    )
    from active_memory.store.paths import (
        default_store_path,
    )
    from active_memory.store.sqlite import (
        SqliteStore,
    )

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "run_postmortem": "active_memory.postmortem.entry",
    "PostmortemOptions": "active_memory.postmortem.options",
    "BindingOverride": "active_memory.postmortem.binding",
    "Card": "active_memory.models.lessons",
    "AuthoredGraph": "active_memory.models.runs",
    "GraphNode": "active_memory.models.runs",
    "Checkout": "active_memory.models.runs",
    "try_specialist": "active_memory.postmortem.specialist_trial",
    "AnswerContract": "active_memory.agents.providers",
    "ModelProvider": "active_memory.agents.providers",
    "ModelRequest": "active_memory.agents.providers",
    "ModelResponse": "active_memory.agents.providers",
    "RetryPolicy": "active_memory.agents.providers",
    "TokenUsage": "active_memory.agents.providers",
    "create_provider": "active_memory.agents.providers",
    "register_provider": "active_memory.agents.providers",
    "LessonChange": "active_memory.postmortem.report",
    "PostmortemReport": "active_memory.postmortem.report",
    "SpecialistReport": "active_memory.postmortem.report",
    "Session": "active_memory.agents.tool_loop",
    "SessionResult": "active_memory.agents.tool_loop",
    "CancelToken": "active_memory.cancel",
    "ActiveMemoryConfig": "active_memory.models.config",
    "PostmortemConfig": "active_memory.models.config",
    "RuntimeConfig": "active_memory.models.config",
    "load_runtime_config": "active_memory.models.config",
    "parse_runtime_config": "active_memory.models.config",
    "ActiveMemoryError": "active_memory.errors",
    "AdmissionError": "active_memory.errors",
    "AnswerRefused": "active_memory.errors",
    "ConfigError": "active_memory.errors",
    "ContractViolation": "active_memory.errors",
    "EvidenceCancelled": "active_memory.errors",
    "EvidenceError": "active_memory.errors",
    "ImportConflict": "active_memory.errors",
    "InputRefused": "active_memory.errors",
    "LessonNotFound": "active_memory.errors",
    "LessonRetired": "active_memory.errors",
    "LessonValidationError": "active_memory.errors",
    "PostmortemError": "active_memory.errors",
    "PromptError": "active_memory.errors",
    "ProvenanceError": "active_memory.errors",
    "ProviderDeadlineExceeded": "active_memory.errors",
    "ProviderError": "active_memory.errors",
    "ProviderTransientError": "active_memory.errors",
    "ProviderUnavailable": "active_memory.errors",
    "PublicationError": "active_memory.errors",
    "PublicationFenced": "active_memory.errors",
    "RecallError": "active_memory.errors",
    "ReplayMismatch": "active_memory.errors",
    "RevisionConflict": "active_memory.errors",
    "RevisionMismatch": "active_memory.errors",
    "RunRecordError": "active_memory.errors",
    "ScopeRefused": "active_memory.errors",
    "SessionCancelled": "active_memory.errors",
    "SnapshotError": "active_memory.errors",
    "StoreError": "active_memory.errors",
    "StoreUnavailable": "active_memory.errors",
    "EvidenceBundle": "active_memory.evidence.builder",
    "build_evidence": "active_memory.evidence.builder",
    "ActiveRun": "active_memory.host",
    "open_run": "active_memory.host",
    "open_backend": "active_memory.host",
    "HarnessWiring": "active_memory.host",
    "Decision": "active_memory.models.changes",
    "Evidence": "active_memory.models.lessons",
    "GraphScope": "active_memory.models.lessons",
    "Lesson": "active_memory.models.lessons",
    "LessonDraft": "active_memory.models.lessons",
    "Mutation": "active_memory.models.changes",
    "Proposal": "active_memory.models.changes",
    "Publication": "active_memory.models.changes",
    "Rejection": "active_memory.models.changes",
    "RepositoryScope": "active_memory.models.lessons",
    "new_lesson_id": "active_memory.models.ids",
    "Binding": "active_memory.models.runs",
    "Delivery": "active_memory.models.runs",
    "Execution": "active_memory.models.runs",
    "Outcome": "active_memory.models.runs",
    "RunRecord": "active_memory.models.runs",
    "ToolReceipt": "active_memory.models.runs",
    "dump_run_record": "active_memory.models.runs",
    "load_run_record": "active_memory.models.runs",
    "ActiveMemoryBackend": "active_memory.store.backend",
    "PublicationControl": "active_memory.store.backend",
    "PublicationReceipt": "active_memory.store.backend",
    "RunIdentity": "active_memory.store.backend",
    "Snapshot": "active_memory.store.backend",
    "SnapshotRequest": "active_memory.store.backend",
    "default_store_path": "active_memory.store.paths",
    "SqliteStore": "active_memory.store.sqlite",
}


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'active_memory' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "ActiveMemoryBackend",
    "ActiveMemoryConfig",
    "ActiveMemoryError",
    "ActiveRun",
    "AdmissionError",
    "AnswerContract",
    "AnswerRefused",
    "AuthoredGraph",
    "Binding",
    "BindingOverride",
    "CancelToken",
    "Card",
    "Checkout",
    "ConfigError",
    "ContractViolation",
    "Decision",
    "Delivery",
    "Evidence",
    "EvidenceBundle",
    "EvidenceCancelled",
    "EvidenceError",
    "Execution",
    "GraphNode",
    "GraphScope",
    "HarnessWiring",
    "ImportConflict",
    "InputRefused",
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
    "PostmortemOptions",
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
    "ScopeRefused",
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
    "open_backend",
    "open_run",
    "parse_runtime_config",
    "register_provider",
    "run_postmortem",
    "try_specialist",
]
