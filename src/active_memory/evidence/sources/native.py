"""The native run record format: ``NAME/run.json`` plus ``transcripts/*.jsonl``.

The JSON Schema (``schemas/run-record.schema.json``) is checked first; then the links between
sections that a schema cannot express: node ids unique, executions on graph nodes with unique ids
and identities, receipt sequence numbers unique, deliveries on graph nodes, transcripts inside the
record folder. Every failure is a :class:`RunRecordError` naming the field path.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from active_memory.errors import LessonValidationError, RunRecordError
from active_memory.models.runs import (
    RUN_FILE,
    AuthoredGraph,
    Binding,
    Checkout,
    Delivery,
    Execution,
    GraphNode,
    Outcome,
    RunRecord,
    ToolReceipt,
)
from active_memory.repository import validate_repository_key
from active_memory.schemas import first_error

__all__ = ["dump_run_record", "load_run_record", "parse_run_record"]


def load_run_record(path: str | os.PathLike[str]) -> RunRecord:
    """Load a record folder (or its ``run.json``); transcripts stay on disk, read lazily."""
    given = Path(path)
    file = given / RUN_FILE if given.is_dir() else given
    source = str(file)
    try:
        text = file.read_text("utf-8")
    except FileNotFoundError:
        raise RunRecordError(
            "$", "no such file; pass a run record folder or its run.json", source=source
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunRecordError("$", f"cannot be read as UTF-8 text ({exc})", source=source) from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunRecordError(
            "$", f"is not valid JSON ({exc.msg} at line {exc.lineno})", source=source
        ) from None
    return parse_run_record(data, file.parent, source=source)


def parse_run_record(data: Any, base_dir: Path, *, source: str | None = None) -> RunRecord:
    """Check ``data`` (the run.json object, paths relative to ``base_dir``) and build it."""
    problem = first_error("run-record", data)
    if problem is not None:
        raise RunRecordError(problem[0], problem[1], source=source)
    return _Parser(data, base_dir, source).record()


class _Parser:
    """Semantic checks the schema cannot express; each failure names its field path."""

    def __init__(self, data: dict[str, Any], base_dir: Path, source: str | None) -> None:
        self.data = data
        self.base = Path(os.path.abspath(base_dir))
        self.source = source

    def fail(self, path: str, problem: str) -> RunRecordError:
        return RunRecordError(path, problem, source=self.source)

    def record(self) -> RunRecord:
        data = self.data
        graph = self.graph(data["graph"])
        if "graph_hash" in data and data["graph_hash"] != graph.hash:
            raise self.fail(
                "graph_hash",
                f"{data['graph_hash']!r} does not match the authored graph ({graph.hash!r}); "
                "the hash is sha256 over the canonical JSON of 'graph' exactly as given",
            )
        executions = self.executions(data["executions"], graph)
        known = {execution.id for execution in executions}
        outcome = data.get("outcome")
        return RunRecord(
            run_id=data["run_id"],
            graph=graph,
            runtime=data["runtime"],
            executions=executions,
            outcome=None if outcome is None else Outcome(**outcome),
            checkout=self.checkout(data.get("checkout")),
            initial_input=data.get("initial_input"),
            receipts=self.receipts(data.get("receipts", []), known),
            deliveries=self.deliveries(data.get("deliveries", []), graph, known),
            base_dir=self.base,
        )

    def graph(self, raw: dict[str, Any]) -> AuthoredGraph:
        nodes: list[GraphNode] = []
        seen: set[str] = set()
        for index, node in enumerate(raw["nodes"]):
            if node["id"] in seen:
                raise self.fail(f"graph.nodes[{index}].id", f"repeats node id {node['id']!r}")
            seen.add(node["id"])
            binding = node.get("binding")
            nodes.append(
                GraphNode(
                    id=node["id"],
                    kind=node["kind"],
                    binding=None
                    if binding is None
                    else Binding(
                        provider=binding["provider"],
                        model=binding["model"],
                        effort=binding.get("effort"),
                        lane=binding.get("lane"),
                        connections=tuple(binding.get("connections", ())),
                    ),
                    instructions=node.get("instructions", ""),
                    output_contract=node.get("output_contract"),
                )
            )
        return AuthoredGraph(name=raw["name"], nodes=tuple(nodes), raw=raw)

    def checkout(self, raw: dict[str, Any] | None) -> Checkout | None:
        if raw is None:
            return None
        try:
            validate_repository_key("checkout.repository", raw["repository"])
        except LessonValidationError as exc:
            raise self.fail("checkout.repository", exc.problem) from None
        path = Path(raw["path"])
        return Checkout(
            path=path if path.is_absolute() else self.base / path,
            repository=raw["repository"],
            commit=raw.get("commit"),
        )

    def executions(self, raw: list[dict[str, Any]], graph: AuthoredGraph) -> tuple[Execution, ...]:
        out: list[Execution] = []
        ids: set[str] = set()
        identities: dict[tuple[str, int, int], int] = {}
        for index, item in enumerate(raw):
            where = f"executions[{index}]"
            if item["id"] in ids:
                raise self.fail(f"{where}.id", f"repeats execution id {item['id']!r}")
            ids.add(item["id"])
            if graph.node(item["node"]) is None:
                raise self.fail(f"{where}.node", f"{item['node']!r} is not a node of the graph")
            identity = (item["node"], item["occurrence"], item["attempt"])
            if identity in identities:
                raise self.fail(
                    f"{where}.attempt",
                    f"node, occurrence and attempt {identity!r} repeat "
                    f"executions[{identities[identity]}]; each execution needs its own identity",
                )
            identities[identity] = index
            ended = item.get("ended_ms")
            if ended is not None and ended < item["started_ms"]:
                raise self.fail(f"{where}.ended_ms", f"{ended!r} is before started_ms")
            transcript = item.get("transcript")
            out.append(
                Execution(
                    id=item["id"],
                    node_id=item["node"],
                    occurrence=item["occurrence"],
                    attempt=item["attempt"],
                    status=item["status"],
                    started_ms=item["started_ms"],
                    ended_ms=ended,
                    conversation_id=item.get("conversation_id"),
                    completion=item.get("completion"),
                    transcript=None
                    if transcript is None
                    else self.inside(f"{where}.transcript", transcript),
                )
            )
        return tuple(out)

    def inside(self, where: str, relative: str) -> Path:
        """A transcript path must stay inside the record folder (no absolute path, no ``..``)."""
        candidate = Path(relative)
        resolved = Path(os.path.realpath(self.base / candidate))
        if candidate.is_absolute() or not resolved.is_relative_to(os.path.realpath(self.base)):
            raise self.fail(
                where, f"{relative!r} leaves the record folder; use a path relative to run.json"
            )
        return self.base / candidate

    def receipts(self, raw: list[dict[str, Any]], known: set[str]) -> tuple[ToolReceipt, ...]:
        out: list[ToolReceipt] = []
        seqs: set[int] = set()
        for index, item in enumerate(raw):
            if item["seq"] in seqs:
                raise self.fail(f"receipts[{index}].seq", f"repeats seq {item['seq']!r}")
            seqs.add(item["seq"])
            execution = item.get("execution")
            if execution is not None and execution not in known:
                raise self.fail(
                    f"receipts[{index}].execution", f"{execution!r} is not an execution id"
                )
            out.append(
                ToolReceipt(
                    seq=item["seq"],
                    execution=execution,
                    time_ms=item["time_ms"],
                    tool=item["tool"],
                    paths=tuple(item.get("paths", ())),
                )
            )
        return tuple(out)

    def deliveries(
        self, raw: list[dict[str, Any]], graph: AuthoredGraph, known: set[str]
    ) -> tuple[Delivery, ...]:
        out: list[Delivery] = []
        for index, item in enumerate(raw):
            where = f"deliveries[{index}]"
            if graph.node(item["node_id"]) is None:
                raise self.fail(
                    f"{where}.node_id", f"{item['node_id']!r} is not a node of the graph"
                )
            execution = item.get("execution")
            if execution is not None and execution not in known:
                raise self.fail(f"{where}.execution", f"{execution!r} is not an execution id")
            out.append(
                Delivery(
                    lesson_id=item["lesson_id"],
                    revision=item["revision"],
                    node_id=item["node_id"],
                    conversation_id=item["conversation_id"],
                    channel=item["channel"],
                    execution=execution,
                    time_ms=item.get("time_ms"),
                )
            )
        return tuple(out)


def dump_run_record(record: RunRecord, folder: str | os.PathLike[str]) -> Path:
    """Write ``record`` as ``folder/run.json`` plus its transcripts; returns the run.json path.

    Transcripts already inside ``folder`` stay where they are; others are copied to
    ``transcripts/<execution id>.jsonl``. Everything is checked before the first write, so a bad
    record leaves no file behind.
    """
    target = Path(os.path.abspath(folder))
    data = record.to_dict(relative_to=target)
    copies: list[tuple[Path, Path]] = []
    for index, execution in enumerate(record.executions):
        if execution.transcript is None:
            continue
        source = Path(os.path.abspath(execution.transcript))
        if not source.is_file():
            raise RunRecordError(
                f"executions[{index}].transcript", f"{str(source)!r} is not a readable file"
            )
        if not source.is_relative_to(target):
            relative = f"transcripts/{_safe_name(execution.id)}-{index}.jsonl"
            data["executions"][index]["transcript"] = relative
            copies.append((source, target / relative))
    parse_run_record(data, target, source=str(target / RUN_FILE))
    target.mkdir(parents=True, exist_ok=True)
    for source, destination in copies:
        destination.parent.mkdir(parents=True, exist_ok=True)
        _atomic_copy(source, destination)
    run_file = target / RUN_FILE
    _atomic_write(run_file, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return run_file


def _safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:80] or "execution"


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.write_text(text, "utf-8")
    os.replace(temporary, path)


def _atomic_copy(source: Path, destination: Path) -> None:
    temporary = destination.with_name(f".{destination.name}.tmp-{os.getpid()}")
    with source.open("rb") as reader, temporary.open("wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)
    os.replace(temporary, destination)
