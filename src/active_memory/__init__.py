"""active-memory: lesson memory for multi-agent coding workflows.

The public API is what ``__all__`` lists; everything else is private and may change.

Each public name is written once, in the ``TYPE_CHECKING`` block below, as ``from module import
Name as Name`` (the form type checkers read as an explicit re-export). Nothing in that block runs:
a public name is imported on its first use (PEP 562), because the hook helper's console script and
its store fallback import this package on every tool call of an agent, so ``import
active_memory`` must cost next to nothing and load no third-party library. On that first use the
block is read as source to learn which module defines the name, the way scientific Python's
``lazy_loader`` reads a package's stub (SPEC 1).
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
        ProviderTransientError as ProviderTransientError,
        ProviderUnavailable as ProviderUnavailable,
        PublicationError as PublicationError,
        PublicationFenced as PublicationFenced,
        QuarantineNotFound as QuarantineNotFound,
        RecallError as RecallError,
        ReplayChanged as ReplayChanged,
        ReplayMismatch as ReplayMismatch,
        RevisionConflict as RevisionConflict,
        RevisionMismatch as RevisionMismatch,
        RunLogError as RunLogError,
        RunRecordError as RunRecordError,
        ScopeRefused as ScopeRefused,
        SessionCancelled as SessionCancelled,
        SnapshotError as SnapshotError,
        StoreError as StoreError,
        StoreUnavailable as StoreUnavailable,
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


def _read_exports() -> dict[str, str]:
    """Public name -> the module that defines it, from this file's ``TYPE_CHECKING`` block."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )  # fmt: skip
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


# public name -> module, filled from the TYPE_CHECKING block on the first public name used
_EXPORTS: dict[str, str] = {}


def _exports() -> dict[str, str]:
    if not _EXPORTS:
        _EXPORTS.update(_read_exports())
    return _EXPORTS


def __getattr__(name: str) -> object:
    if name == "__all__":
        value: object = sorted([*_exports(), "__version__"])
    else:
        module = _exports().get(name)
        if module is None:
            raise AttributeError(f"module 'active_memory' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_exports()))
