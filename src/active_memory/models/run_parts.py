"""The parts of a run record: the authored graph and its nodes, the checkout, executions, tool
receipts, deliveries and the outcome (the record itself is :mod:`active_memory.models.runs`).

Each part validates its own fields whenever it is built; a failure is a
:class:`~active_memory.errors.RunRecordError` naming the field. Validated with a
:class:`RecordDocument` context, the parts read the ``run.json`` form: paths relative to the
record folder, host keys of the authored graph kept in its ``raw`` form only.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    SerializationInfo,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from active_memory.bounded_input import regular_file_problem
from active_memory.errors import LessonValidationError, RunRecordError
from active_memory.models.problems import FamilyModel, add_unique, family_problem, problem_at
from active_memory.repository import validate_repository_key

__all__ = [
    "AGENT_KINDS",
    "AuthoredGraph",
    "Binding",
    "Checkout",
    "Delivery",
    "Execution",
    "ExecutionStatus",
    "GraphNode",
    "Items",
    "Outcome",
    "OutcomeStatus",
    "RecordDocument",
    "RecordId",
    "RunModel",
    "ToolReceipt",
    "canonical_json",
    "graph_hash",
    "record_document",
]

ExecutionStatus: TypeAlias = Literal["completed", "error", "timeout", "crashed", "cancelled"]
OutcomeStatus: TypeAlias = Literal["succeeded", "failed", "cancelled"]
# Node kinds whose nodes run a model; other kinds (map, join, choice, tool…) are structure.
AGENT_KINDS = frozenset({"worker", "verifier"})


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 kept: the encoding hashes are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def graph_hash(authored: Any) -> str:
    """sha256 hex over the canonical encoding of the authored graph exactly as written."""
    return hashlib.sha256(canonical_json(authored).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class RecordDocument:
    """Validation and serialisation context: the record as ``run.json`` in ``folder``.

    Paths in the document are relative to the folder; host keys of the authored graph are kept in
    its ``raw`` form only; the links between sections are checked. ``folder`` is None when only
    the authored graph is read (checking a given ``raw`` against its nodes).
    """

    folder: Path | None


def record_document(context: object) -> RecordDocument | None:
    return context if isinstance(context, RecordDocument) else None


def as_tuple(value: object) -> object:
    # JSON arrays arrive as lists; strict validation takes only tuples for tuple fields.
    if type(value) is list:
        return tuple(value)
    if not isinstance(value, tuple):
        raise PydanticCustomError("array_type", "must be an array")
    return value


def _repository_key(value: str) -> str:
    try:
        return validate_repository_key("repository", value)
    except LessonValidationError as error:
        raise PydanticCustomError("repository_key", error.problem) from None


_T = TypeVar("_T")
Items = Annotated[tuple[_T, ...], BeforeValidator(as_tuple)]
RecordId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[^\s/\\]+$")]
Text = Annotated[str, Field(min_length=1)]


def _whole_number(value: object) -> object:
    # JSON Schema's "integer" admits 1748772001500.0 (a host writing numbers as doubles); any
    # other float, a string or a bool still fails the strict integer check after this.
    return int(value) if type(value) is float and value.is_integer() else value


Millis = Annotated[int, Field(ge=0), BeforeValidator(_whole_number)]
Ordinal = Annotated[int, Field(ge=1), BeforeValidator(_whole_number)]
FilePath = Annotated[Path, Field(json_schema_extra={"minLength": 1})]
RepositoryKey = Annotated[str, Field(min_length=1), AfterValidator(_repository_key)]
CommitId = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]


class RunModel(FamilyModel):
    """A part of a run record: a failed check is a RunRecordError naming the field."""

    # Host JSON read by Python's json module may hold Infinity; write it back as it came.
    model_config = ConfigDict(ser_json_inf_nan="constants")
    validation_error = RunRecordError


def _keep_host_keys(schema: dict[str, Any]) -> None:
    schema.pop("additionalProperties", None)


class _AuthoredPart(RunModel):
    """A part of the authored graph. In a document, keys it does not read belong to the host:
    they stay in :attr:`AuthoredGraph.raw` (and in the hash), never in the typed model."""

    model_config = ConfigDict(json_schema_extra=_keep_host_keys)

    @model_validator(mode="before")
    @classmethod
    def _read_known_keys(cls, data: object, info: ValidationInfo) -> object:
        if record_document(info.context) is None or not isinstance(data, dict):
            return data
        return {key: value for key, value in data.items() if key in cls.model_fields}


class Binding(_AuthoredPart):
    """How an agent node runs: plain data, resolved through the provider registry."""

    provider: Text
    model: Text
    effort: str | None = None
    lane: str | None = None
    connections: Items[str] = ()


class GraphNode(_AuthoredPart):
    """One authored node; only worker and verifier nodes with a binding run a model."""

    id: RecordId
    kind: Text
    binding: Binding | None = None
    instructions: str = ""
    output_contract: JsonValue = None

    @property
    def is_agent(self) -> bool:
        return self.binding is not None and self.kind in AGENT_KINDS


def _authored_schema(schema: dict[str, Any]) -> None:
    # The document's graph is the authored JSON itself: raw is the whole object, not a key.
    schema["properties"].pop("raw", None)
    schema.pop("additionalProperties", None)


class AuthoredGraph(RunModel):
    """The authored graph exactly as written; graph_hash is sha256 over its canonical JSON. Keys
    other than name and nodes (edges, retry policies…) belong to the host and are kept.

    ``raw`` is that authored JSON: in a record document the graph *is* ``raw`` and ``name`` and
    ``nodes`` are read from it. Built in code, ``raw`` is made from ``name`` and ``nodes`` when
    left out, and must agree with them when given.
    """

    model_config = ConfigDict(json_schema_extra=_authored_schema)

    name: Text
    nodes: Annotated[tuple[GraphNode, ...], Field(min_length=1), BeforeValidator(as_tuple)]
    raw: JsonValue = None

    @model_validator(mode="wrap")
    @classmethod
    def _authored(
        cls, data: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> AuthoredGraph:
        document = record_document(info.context)
        if document is not None and isinstance(data, dict):
            known = {key: data[key] for key in ("name", "nodes") if key in data}
            graph: AuthoredGraph = handler({**known, "raw": data})
        else:
            graph = handler(data)
            if graph.raw is None:
                # Still being built (pydantic hands the wrap validator the instance __init__
                # fills), so this is the one assignment a frozen model allows.
                object.__setattr__(graph, "raw", graph._built())
            elif not isinstance(data, AuthoredGraph):
                graph._check_raw()
        graph._check_unique_ids()
        return graph

    def _built(self) -> dict[str, JsonValue]:
        return {"name": self.name, "nodes": [node.model_dump(mode="json") for node in self.nodes]}

    def _check_raw(self) -> None:
        try:
            read = AuthoredGraph.model_validate(self.raw, context=RecordDocument(None))
        except ValidationError as error:
            path, rule = family_problem(error, AuthoredGraph)
            raise problem_at(("raw",), "graph_raw", f"{path}: {rule}") from None
        if (read.name, read.nodes) != (self.name, self.nodes):
            raise problem_at(
                ("raw",),
                "graph_raw_mismatch",
                "does not match name and nodes; leave it out to build it from them",
            )

    def _check_unique_ids(self) -> None:
        seen: set[str] = set()
        for index, node in enumerate(self.nodes):
            add_unique(seen, node.id, ("nodes", index, "id"), "node_id_repeated", "node id")

    @model_serializer(mode="plain")
    def _as_authored(self) -> JsonValue:
        return self.raw

    @property
    def hash(self) -> str:
        return graph_hash(self.raw)

    def node(self, node_id: str) -> GraphNode | None:
        for node in self.nodes:
            if node.id == node_id:
                return node
        return None


def _path_in(value: object, info: ValidationInfo) -> object:
    """A document path as a Path: absolute as given, relative to the record folder otherwise."""
    document = record_document(info.context)
    if document is None or document.folder is None or not isinstance(value, str):
        return value
    if not value:
        raise PydanticCustomError("path_empty", "must not be empty")
    path = Path(value)
    return path if path.is_absolute() else document.folder / path


def _path_out(path: Path | None, info: SerializationInfo) -> str | Path | None:
    """Relative (POSIX) to the record folder when under it, absolute otherwise."""
    if path is None:
        return None
    document = record_document(info.context)
    if document is None or document.folder is None:
        return str(path) if info.mode_is_json() else path
    absolute = Path(os.path.abspath(path))
    if absolute.is_relative_to(document.folder):
        return absolute.relative_to(document.folder).as_posix()
    return str(absolute)


# A path of the record (the checkout, a transcript): written relative to the record folder.
_RecordPath = Annotated[FilePath, PlainSerializer(_path_out)]


class Checkout(RunModel):
    """The repository checkout the run worked in; ``commit`` is the recorded HEAD if known."""

    path: Annotated[_RecordPath, BeforeValidator(_path_in)]
    repository: RepositoryKey
    commit: CommitId | None = None


class Execution(RunModel):
    """One execution of a node. Occurrence (which visit, e.g. map item) and attempt (retry)
    are part of its identity: shared node names alone never merge executions."""

    model_config = ConfigDict(
        validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    id: RecordId
    node_id: Text = Field(validation_alias="node", serialization_alias="node")
    occurrence: Ordinal
    attempt: Ordinal
    status: ExecutionStatus
    started_ms: Millis
    ended_ms: Millis | None = None
    conversation_id: str | None = None
    completion: str | None = None
    transcript: _RecordPath | None = None
    # Copied from an earlier run's history (resume, backfill): visible to the evidence builder,
    # but never current-run evidence for admission.
    # Left out of the document when false, so a record of a plain run reads as it always did.
    imported: bool = Field(default=False, exclude_if=lambda value: value is False)
    # Why the execution's own account could not be read (a subagent whose transcript file is
    # missing, or is a FIFO): it ran, but its status and completion come from its launcher only.
    # Left out of the document when none.
    unavailable: Annotated[str, Field(min_length=1, max_length=512)] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )

    @model_validator(mode="before")
    @classmethod
    def _document_keys(cls, data: object, info: ValidationInfo) -> object:
        # A document names the node "node"; the attribute's name is no key of it. (Pydantic's
        # by_name=False does not reach a model below the record's wrap validator.)
        document = record_document(info.context) is not None
        if document and isinstance(data, dict) and "node_id" in data:
            raise problem_at(("node_id",), "extra_forbidden", "is not a known field")
        return data

    @field_validator("transcript", mode="before")
    @classmethod
    def _transcript_inside(cls, value: object, info: ValidationInfo) -> object:
        """A document's transcript stays inside the record folder (no absolute path, no ``..``,
        no symlink out)."""
        if isinstance(value, str) and "\0" in value:
            raise PydanticCustomError(
                "path_nul", "has a NUL character in its path; name the real transcript file"
            )
        document = record_document(info.context)
        if document is None or document.folder is None or not isinstance(value, str) or not value:
            return _path_in(value, info)
        if os.path.exists(document.folder / value):  # a link to /dev/zero: named by its type
            problem = regular_file_problem(document.folder / value)
            if problem is not None:
                raise PydanticCustomError("transcript_not_regular", f"{value!r} {problem}")
        resolved = Path(os.path.realpath(document.folder / value))
        if Path(value).is_absolute() or not resolved.is_relative_to(
            os.path.realpath(document.folder)
        ):
            raise PydanticCustomError(
                "transcript_outside",
                f"{value!r} leaves the record folder; use a path relative to run.json",
            )
        return document.folder / value

    @model_validator(mode="after")
    def _ends_after_start(self) -> Execution:
        if self.ended_ms is not None and self.ended_ms < self.started_ms:
            raise problem_at(
                ("ended_ms",), "ended_before_start", f"{self.ended_ms!r} is before started_ms"
            )
        return self

    @property
    def ref(self) -> str:
        """The evidence reference specialists cite: ``exec:<id>``."""
        return f"exec:{self.id}"


class ToolReceipt(RunModel):
    """A bounded record of one tool call: never arguments or results, never success claims."""

    seq: Millis
    execution: str | None = None
    time_ms: Millis
    tool: Text
    paths: Items[str] = ()


class Delivery(RunModel):
    """One lesson revision handed to one conversation: through a hook or the node prompt.

    ``receipt_seq`` is the seq of the tool receipt of the call a hook delivery rode on (None
    for a node prompt, and in records made before deliveries named it)."""

    lesson_id: Text
    revision: Ordinal
    node_id: Text
    conversation_id: Text
    channel: Literal["hook", "prompt"]
    execution: str | None = None
    time_ms: Millis | None = None
    receipt_seq: Millis | None = None

    @property
    def key(self) -> str:
        return f"{self.lesson_id}@{self.revision}"


class Outcome(RunModel):
    """The main graph's result, latched durably before any postmortem work."""

    status: OutcomeStatus
    latched_ms: Millis
    summary: str | None = None
