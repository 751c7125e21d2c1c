"""active-memory: lesson memory for multi-agent coding workflows.

The public API is what ``__all__`` lists; everything else is private and may change.

Type checkers read the public names in the ``TYPE_CHECKING`` block below, as ``from module
import Name as Name`` (their form of an explicit re-export). Nothing in that block runs: a public
name is imported on its first use (PEP 562) from the module ``_EXPORTS`` names, because the hook
helper's console script and its store fallback import this package on every tool call of an
agent, so ``import active_memory`` must cost next to nothing and load no third-party library.
``tests/test_public_api.py`` keeps the block and ``_EXPORTS`` equal.
"""

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing (a measurable share of a hook call's start-up);
# type checkers treat the name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from active_memory.agents.providers import (
        AnswerContract as AnswerContract,
        ModelProvider as ModelProvider,
        ModelRequest as ModelRequest,
        ModelResponse as ModelResponse,
        RetryPolicy as RetryPolicy,
        TokenUsage as TokenUsage,
        create_provider as create_provider,
        register_provider as register_provider,
    )
    from active_memory.agents.tool_loop import (
        Session as Session,
        SessionResult as SessionResult,
    )
    from active_memory.cancel import (
        CancelToken as CancelToken,
    )
    from active_memory.errors import (
        ActiveMemoryError as ActiveMemoryError,
        AdmissionError as AdmissionError,
        AnswerRefused as AnswerRefused,
        ConfigError as ConfigError,
        ContractViolation as ContractViolation,
        EvidenceCancelled as EvidenceCancelled,
        EvidenceError as EvidenceError,
        HarnessUnavailable as HarnessUnavailable,
        ImportConflict as ImportConflict,
        InputRefused as InputRefused,
        LessonNotFound as LessonNotFound,
        LessonRetired as LessonRetired,
        LessonValidationError as LessonValidationError,
        MalformedAnswer as MalformedAnswer,
        ModelRefused as ModelRefused,
        PostmortemError as PostmortemError,
        PromptError as PromptError,
        ProvenanceError as ProvenanceError,
        ProviderDeadlineExceeded as ProviderDeadlineExceeded,
        ProviderError as ProviderError,
        ProviderNoAnswer as ProviderNoAnswer,
        ProviderTransientError as ProviderTransientError,
        ProviderUnavailable as ProviderUnavailable,
        PublicationError as PublicationError,
        PublicationFenced as PublicationFenced,
        QuarantineNotFound as QuarantineNotFound,
        RecallError as RecallError,
        RepetitiveOutput as RepetitiveOutput,
        ReplayChanged as ReplayChanged,
        ReplayMismatch as ReplayMismatch,
        RevisionConflict as RevisionConflict,
        RevisionMismatch as RevisionMismatch,
        RunLogError as RunLogError,
        RunRecordError as RunRecordError,
        ScopeRefused as ScopeRefused,
        ScreenRefused as ScreenRefused,
        SessionCancelled as SessionCancelled,
        SnapshotError as SnapshotError,
        StoreError as StoreError,
        StoreUnavailable as StoreUnavailable,
        WriteInterrupted as WriteInterrupted,
    )
    from active_memory.evidence.builder import (
        EvidenceBundle as EvidenceBundle,
        build_evidence as build_evidence,
    )
    from active_memory.history_init.state import (
        InitRefused as InitRefused,
    )
    from active_memory.host import (
        ActiveRun as ActiveRun,
        HarnessWiring as HarnessWiring,
        open_backend as open_backend,
        open_run as open_run,
    )
    from active_memory.models.changes import (
        Decision as Decision,
        Mutation as Mutation,
        Proposal as Proposal,
        Publication as Publication,
        Rejection as Rejection,
    )
    from active_memory.models.config import (
        ActiveMemoryConfig as ActiveMemoryConfig,
        PostmortemConfig as PostmortemConfig,
        RuntimeConfig as RuntimeConfig,
        load_runtime_config as load_runtime_config,
        parse_runtime_config as parse_runtime_config,
    )
    from active_memory.models.ids import (
        new_lesson_id as new_lesson_id,
    )
    from active_memory.models.lessons import (
        Card as Card,
        Evidence as Evidence,
        GraphScope as GraphScope,
        Lesson as Lesson,
        LessonDraft as LessonDraft,
        RepositoryScope as RepositoryScope,
    )
    from active_memory.models.runs import (
        AuthoredGraph as AuthoredGraph,
        Binding as Binding,
        Checkout as Checkout,
        Delivery as Delivery,
        Execution as Execution,
        GraphNode as GraphNode,
        Outcome as Outcome,
        RunRecord as RunRecord,
        ToolReceipt as ToolReceipt,
        dump_run_record as dump_run_record,
        load_run_record as load_run_record,
    )
    from active_memory.postmortem.binding import (
        BindingOverride as BindingOverride,
    )
    from active_memory.postmortem.entry import (
        run_postmortem as run_postmortem,
    )
    from active_memory.postmortem.options import (
        PostmortemOptions as PostmortemOptions,
    )
    from active_memory.postmortem.report import (
        LessonChange as LessonChange,
        PostmortemReport as PostmortemReport,
        SpecialistReport as SpecialistReport,
    )
    from active_memory.postmortem.specialist_trial import (
        try_specialist as try_specialist,
    )
    from active_memory.store.backend import (
        ActiveMemoryBackend as ActiveMemoryBackend,
        PublicationControl as PublicationControl,
        PublicationReceipt as PublicationReceipt,
        RunIdentity as RunIdentity,
        Snapshot as Snapshot,
        SnapshotRequest as SnapshotRequest,
    )
    from active_memory.store.paths import (
        default_store_path as default_store_path,
    )
    from active_memory.store.sqlite import (
        SqliteStore as SqliteStore,
    )

__version__ = "0.1.0"


# public name -> the module that defines it: what a first use imports. The TYPE_CHECKING block
# above says the same for type checkers; tests/test_public_api.py keeps the two equal.
_EXPORTS: dict[str, str] = {
    "AnswerContract": "active_memory.agents.providers",
    "ModelProvider": "active_memory.agents.providers",
    "ModelRequest": "active_memory.agents.providers",
    "ModelResponse": "active_memory.agents.providers",
    "RetryPolicy": "active_memory.agents.providers",
    "TokenUsage": "active_memory.agents.providers",
    "create_provider": "active_memory.agents.providers",
    "register_provider": "active_memory.agents.providers",
    "Session": "active_memory.agents.tool_loop",
    "SessionResult": "active_memory.agents.tool_loop",
    "CancelToken": "active_memory.cancel",
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
    "MalformedAnswer": "active_memory.errors",
    "ModelRefused": "active_memory.errors",
    "RepetitiveOutput": "active_memory.errors",
    "PostmortemError": "active_memory.errors",
    "PromptError": "active_memory.errors",
    "ProvenanceError": "active_memory.errors",
    "ProviderDeadlineExceeded": "active_memory.errors",
    "ProviderError": "active_memory.errors",
    "ProviderNoAnswer": "active_memory.errors",
    "ProviderTransientError": "active_memory.errors",
    "ProviderUnavailable": "active_memory.errors",
    "HarnessUnavailable": "active_memory.errors",
    "PublicationError": "active_memory.errors",
    "PublicationFenced": "active_memory.errors",
    "QuarantineNotFound": "active_memory.errors",
    "RecallError": "active_memory.errors",
    "ReplayChanged": "active_memory.errors",
    "ReplayMismatch": "active_memory.errors",
    "RevisionConflict": "active_memory.errors",
    "RevisionMismatch": "active_memory.errors",
    "RunLogError": "active_memory.errors",
    "RunRecordError": "active_memory.errors",
    "ScopeRefused": "active_memory.errors",
    "ScreenRefused": "active_memory.errors",
    "SessionCancelled": "active_memory.errors",
    "SnapshotError": "active_memory.errors",
    "StoreError": "active_memory.errors",
    "StoreUnavailable": "active_memory.errors",
    "WriteInterrupted": "active_memory.errors",
    "EvidenceBundle": "active_memory.evidence.builder",
    "build_evidence": "active_memory.evidence.builder",
    "InitRefused": "active_memory.history_init.state",
    "ActiveRun": "active_memory.host",
    "HarnessWiring": "active_memory.host",
    "open_backend": "active_memory.host",
    "open_run": "active_memory.host",
    "Decision": "active_memory.models.changes",
    "Mutation": "active_memory.models.changes",
    "Proposal": "active_memory.models.changes",
    "Publication": "active_memory.models.changes",
    "Rejection": "active_memory.models.changes",
    "ActiveMemoryConfig": "active_memory.models.config",
    "PostmortemConfig": "active_memory.models.config",
    "RuntimeConfig": "active_memory.models.config",
    "load_runtime_config": "active_memory.models.config",
    "parse_runtime_config": "active_memory.models.config",
    "new_lesson_id": "active_memory.models.ids",
    "Card": "active_memory.models.lessons",
    "Evidence": "active_memory.models.lessons",
    "GraphScope": "active_memory.models.lessons",
    "Lesson": "active_memory.models.lessons",
    "LessonDraft": "active_memory.models.lessons",
    "RepositoryScope": "active_memory.models.lessons",
    "AuthoredGraph": "active_memory.models.runs",
    "Binding": "active_memory.models.runs",
    "Checkout": "active_memory.models.runs",
    "Delivery": "active_memory.models.runs",
    "Execution": "active_memory.models.runs",
    "GraphNode": "active_memory.models.runs",
    "Outcome": "active_memory.models.runs",
    "RunRecord": "active_memory.models.runs",
    "ToolReceipt": "active_memory.models.runs",
    "dump_run_record": "active_memory.models.runs",
    "load_run_record": "active_memory.models.runs",
    "BindingOverride": "active_memory.postmortem.binding",
    "run_postmortem": "active_memory.postmortem.entry",
    "PostmortemOptions": "active_memory.postmortem.options",
    "LessonChange": "active_memory.postmortem.report",
    "PostmortemReport": "active_memory.postmortem.report",
    "SpecialistReport": "active_memory.postmortem.report",
    "try_specialist": "active_memory.postmortem.specialist_trial",
    "ActiveMemoryBackend": "active_memory.store.backend",
    "PublicationControl": "active_memory.store.backend",
    "PublicationReceipt": "active_memory.store.backend",
    "RunIdentity": "active_memory.store.backend",
    "Snapshot": "active_memory.store.backend",
    "SnapshotRequest": "active_memory.store.backend",
    "default_store_path": "active_memory.store.paths",
    "SqliteStore": "active_memory.store.sqlite",
}


__all__ = sorted([*_EXPORTS, "__version__"])


def _lazy_attribute(namespace: dict[str, object], exports: dict[str, str], name: str) -> object:
    """A package's PEP 562 ``__getattr__``: ``name`` from the module ``exports`` names, kept in
    the package's ``namespace`` so later lookups skip this. Shared with the subpackages that
    export lazily (``active_memory.server``), without a module of its own to import."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value


def __getattr__(name: str) -> object:
    return _lazy_attribute(globals(), _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
