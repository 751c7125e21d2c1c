"""The run record: what a host hands over after its graph settles.

It holds the authored graph (with bindings) and its hash, the nonsecret runtime, every execution
with its identity (node, occurrence, attempt), tool receipts, the delivery manifest (which lesson
``id@revision`` reached which node and conversation, and how), the repository checkout and the
latched outcome (the parts are in :mod:`active_memory.models.run_parts`). Transcripts stay in
JSONL files and are read lazily by ``evidence/``.

The models validate their own fields whenever they are built. A record read from its folder
(``run.json``, see :func:`load_run_record`) is also checked for what links its sections: node ids
unique, executions on graph nodes with unique ids and identities, receipt sequence numbers unique,
receipts and deliveries pointing at known executions and nodes, transcripts inside the folder and
``graph_hash`` equal to the authored graph's. Those links are left to the document because a host
may hold a partial record in memory (an auxiliary execution outside the graph, say) that
admission then refuses item by item. Every failure is a :class:`RunRecordError` naming the field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import (
    ConfigDict,
    JsonValue,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from active_memory.bounded_input import check_path, read_json, regular_file_problem
from active_memory.errors import InputRefused, RunRecordError
from active_memory.models.problems import add_unique, family_problem, problem_at
from active_memory.models.run_parts import (
    AGENT_KINDS,
    AuthoredGraph,
    Binding,
    Checkout,
    Delivery,
    Execution,
    ExecutionStatus,
    GraphNode,
    Items,
    Outcome,
    OutcomeStatus,
    RecordDocument,
    RecordId,
    RunModel,
    ToolReceipt,
    canonical_json,
    graph_hash,
    record_document,
)
from active_memory.private_files import copy_private_file, write_private_text

__all__ = [
    "AGENT_KINDS",
    "RECORD_FORMAT",
    "RUN_FILE",
    "AuthoredGraph",
    "Binding",
    "Checkout",
    "Delivery",
    "Execution",
    "ExecutionStatus",
    "GraphNode",
    "Outcome",
    "OutcomeStatus",
    "RunRecord",
    "ToolReceipt",
    "canonical_json",
    "dump_run_record",
    "graph_hash",
    "load_run_record",
    "parse_run_record",
]

# Far above any real record (its transcripts are separate files); a run.json symlinked to
# /dev/zero or grown without bound stops here instead of filling memory.
MAX_RUN_FILE_BYTES = 64 * 1024 * 1024

RECORD_FORMAT = "active-memory/run-record@1"
RUN_FILE = "run.json"
_HASH_LENGTH = 64


def _record_schema(schema: dict[str, Any]) -> None:
    # Two keys of the document are not stored: the constant format and the hash of the graph.
    properties: dict[str, Any] = {"format": {"const": RECORD_FORMAT}}
    for key, value in schema["properties"].items():
        if key == "graph":
            properties["graph_hash"] = {
                "description": "optional; when given, sha256 over the canonical JSON of graph",
                "type": "string",
                "pattern": f"^[0-9a-f]{{{_HASH_LENGTH}}}$",
            }
        properties[key] = value
    schema["properties"] = properties
    schema["required"] = ["format", *schema["required"]]


class RunRecord(RunModel):
    """What a host hands over after its graph settles (run.json in a record folder). Transcript
    and checkout paths are relative to the folder that holds run.json, or absolute."""

    model_config = ConfigDict(title="active-memory run record", json_schema_extra=_record_schema)

    run_id: RecordId
    outcome: Outcome | None = None
    checkout: Checkout | None = None
    initial_input: str | None = None
    graph: AuthoredGraph
    runtime: dict[str, JsonValue]
    executions: Items[Execution]
    receipts: Items[ToolReceipt] = ()
    deliveries: Items[Delivery] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _document_keys(
        cls, data: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> RunRecord:
        if record_document(info.context) is None or not isinstance(data, dict):
            record: RunRecord = handler(data)
            return record
        fields = dict(data)
        if "format" not in fields:
            raise problem_at(("format",), "missing", "is required")
        if fields.pop("format") != RECORD_FORMAT:
            raise problem_at(("format",), "record_format", f"must be {RECORD_FORMAT!r}")
        declared = fields.pop("graph_hash", None)
        if "graph_hash" in data and not isinstance(declared, str):
            raise problem_at(
                ("graph_hash",), "string_type", "must be 64 lowercase hex characters, or left out"
            )
        record = handler(fields)
        if declared is not None and declared != record.graph_hash:
            raise problem_at(
                ("graph_hash",),
                "graph_hash_mismatch",
                f"{declared!r} does not match the authored graph ({record.graph_hash!r}); "
                "the hash is sha256 over the canonical JSON of 'graph' exactly as given",
            )
        record._check_links()
        return record

    def _check_links(self) -> None:
        """What links the sections of a document: each failure names the entry it found."""
        nodes = {node.id for node in self.graph.nodes}
        ids: set[str] = set()
        identities: dict[tuple[str, int, int], int] = {}
        for index, execution in enumerate(self.executions):
            add_unique(
                ids,
                execution.id,
                ("executions", index, "id"),
                "execution_id_repeated",
                "execution id",
            )
            _known_node(("executions", index, "node"), execution.node_id, nodes)
            identity = (execution.node_id, execution.occurrence, execution.attempt)
            if identity in identities:
                raise problem_at(
                    ("executions", index, "attempt"),
                    "execution_identity_repeated",
                    f"node, occurrence and attempt {identity!r} repeat "
                    f"executions[{identities[identity]}]; each execution needs its own identity",
                )
            identities[identity] = index
        seqs: set[int] = set()
        for index, receipt in enumerate(self.receipts):
            add_unique(seqs, receipt.seq, ("receipts", index, "seq"), "seq_repeated", "seq")
            _known_execution(("receipts", index), receipt.execution, ids)
        for index, delivery in enumerate(self.deliveries):
            _known_node(("deliveries", index, "node_id"), delivery.node_id, nodes)
            _known_execution(("deliveries", index), delivery.execution, ids)

    @model_serializer(mode="wrap")
    def _as_document(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields: dict[str, Any] = handler(self)
        out: dict[str, Any] = {"format": RECORD_FORMAT}
        for key, value in fields.items():
            if key == "graph":
                out["graph_hash"] = self.graph_hash
            out[key] = value
        return out

    @property
    def graph_hash(self) -> str:
        return self.graph.hash

    def document(self, folder: str | os.PathLike[str]) -> dict[str, Any]:
        """The run.json object, paths relative to ``folder`` (absolute when outside it)."""
        context = RecordDocument(Path(os.path.abspath(folder)))
        data: dict[str, Any] = self.model_dump(mode="json", context=context)
        return data

    def execution(self, execution_id: str) -> Execution | None:
        for execution in self.executions:
            if execution.id == execution_id:
                return execution
        return None


def _known_node(location: tuple[str, int, str], node_id: str, nodes: set[str]) -> None:
    if node_id not in nodes:
        raise problem_at(location, "unknown_node", f"{node_id!r} is not a node of the graph")


def _known_execution(where: tuple[str, int], execution: str | None, ids: set[str]) -> None:
    if execution is not None and execution not in ids:
        raise problem_at(
            (*where, "execution"), "unknown_execution", f"{execution!r} is not an execution id"
        )


def parse_run_record(data: Any, base_dir: Path, *, source: str | None = None) -> RunRecord:
    """Check ``data`` (a run.json object whose paths are relative to ``base_dir``) and build it.

    Raises :class:`~active_memory.errors.RunRecordError` naming the bad field
    (``executions[3].node``) and the rule it breaks.
    """
    if not isinstance(data, dict):
        raise RunRecordError("$", "must be a JSON object", source=source)
    context = RecordDocument(Path(os.path.abspath(base_dir)))
    try:
        return RunRecord.model_validate(data, context=context, by_alias=True, by_name=False)
    except ValidationError as error:
        raise RunRecordError(*family_problem(error, RunRecord), source=source) from None


def load_run_record(path: str | os.PathLike[str]) -> RunRecord:
    """Load a record folder (or its ``run.json``); transcripts stay on disk, read lazily.

    ``run.json`` goes through the bounded reader (a regular file of at most
    ``MAX_RUN_FILE_BYTES``, strict UTF-8, bounded JSON), and each transcript it names must be a
    regular file when it exists: a FIFO or a device there would hold every later read.
    """
    source = repr(os.fspath(path))
    try:
        given = Path(check_path(path, what=""))
        file = given / RUN_FILE if given.is_dir() else given
        source = str(file)
        if not os.path.lexists(file):
            raise RunRecordError(
                "$", "no such file; pass a run record folder or its run.json", source=source
            )
        data = read_json(file, what="", max_bytes=MAX_RUN_FILE_BYTES)
    except InputRefused as refused:
        raise RunRecordError("$", refused.problem, source=source) from None
    record = parse_run_record(data, file.parent, source=source)
    for index, execution in enumerate(record.executions):
        transcript = execution.transcript
        if transcript is None or not os.path.lexists(transcript):
            continue  # a missing transcript is reported as unavailable by the evidence
        problem = regular_file_problem(transcript)
        if problem is not None:
            raise RunRecordError(f"executions[{index}].transcript", problem, source=source)
    return record


def dump_run_record(record: RunRecord, folder: str | os.PathLike[str]) -> Path:
    """Write ``record`` as ``folder/run.json`` plus its transcripts; returns the run.json path.

    Transcripts already inside ``folder`` stay where they are; others are copied to
    ``transcripts/<execution id>-<index>.jsonl``. Everything is checked before the first write,
    so a bad record leaves no file behind; what is written loads back as an equal record.
    """
    target = Path(os.path.abspath(folder))
    run_file = target / RUN_FILE
    copies: list[tuple[Path, Path]] = []
    executions = list(record.executions)
    for index, execution in enumerate(executions):
        if execution.transcript is None:
            continue
        source = Path(os.path.abspath(execution.transcript))
        if not source.is_file():
            raise RunRecordError(
                f"executions[{index}].transcript",
                f"{str(source)!r} is not a readable file",
                source=str(run_file),
            )
        if not source.is_relative_to(target):
            copy = target / "transcripts" / f"{_safe_name(execution.id)}-{index}.jsonl"
            copies.append((source, copy))
            executions[index] = execution.model_copy(update={"transcript": copy})
    placed = record.model_copy(update={"executions": tuple(executions)})
    data = placed.document(target)
    parse_run_record(data, target, source=str(run_file))
    target.mkdir(parents=True, exist_ok=True)
    for source, destination in copies:
        destination.parent.mkdir(parents=True, exist_ok=True)
        copy_private_file(source, destination)
    # Private like every other copy of a transcript: a saved run holds what its agents read.
    write_private_text(run_file, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return run_file


def _safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80] or "execution"
