"""build_evidence: what one postmortem specialist sees of a run, within a byte budget.

Pure apart from the private files it writes: the same record, specialist, lessons and budget
give the same serialized payload (canonical JSON, sorted keys). The serialized payload never
exceeds ``budget_bytes``; every cut is listed in ``truncation`` and flagged by
``evidence_truncated``. What each specialist receives:

=======================  =====  ========  ===========  ===========  ========  ==========
specialist               graph  checkout  completions  transcripts  receipts  deliveries
=======================  =====  ========  ===========  ===========  ========  ==========
graph_maintenance        yes    no        yes          no           no        yes
repository_maintenance   no     yes       no           no           yes       yes
graph_discovery          yes    no        yes          yes          yes       no
repository_discovery     no     yes       yes          yes          yes       no
=======================  =====  ========  ===========  ===========  ========  ==========

Every specialist gets the run identity, the latched outcome, the initial input (≤ 4 KiB), every
execution's identity (``exec:<id>``, node, occurrence, attempt, status) and pointers to private
files holding the complete authored graph and nonsecret runtime. Maintenance specialists also get
the supplied lessons and before/current changes, which are never trimmed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from active_memory.errors import EvidenceError
from active_memory.evidence.budget import EXCERPT_BYTES, cut_text, json_size, redact_and_cut
from active_memory.evidence.complete_copies import (
    COPY_FOLDER,
    CopyWriter,
    copy_cut_transcripts,
    copy_left_out,
)
from active_memory.evidence.failures import deliveries_before_failures
from active_memory.evidence.fill import collect_to_fill
from active_memory.evidence.history import Excerpt, TranscriptReading
from active_memory.evidence.listing import fit_listing
from active_memory.evidence.pager import Cancellation, PageLimits
from active_memory.evidence.paths import PathRewriter
from active_memory.evidence.private import prepare_private_dir, write_private_file
from active_memory.evidence.receipt_labels import citable_receipts
from active_memory.evidence.redact import redact_text, redact_value
from active_memory.evidence.shrink import shrink_strings
from active_memory.evidence.source_notes import log_source_cuts, receipts_made, unavailable_refs
from active_memory.evidence.trim import Trimmer
from active_memory.evidence.truncation import CutLog, TruncationReport
from active_memory.models.runs import Checkout, Delivery, RunRecord, canonical_json
from active_memory.roles import ROLE_BY_NAME, RoleRow

__all__ = [
    "EVIDENCE_FORMAT",
    "SPECIALISTS",
    "EvidenceBundle",
    "build_evidence",
]

EVIDENCE_FORMAT = "active-memory/evidence@1"
DEFAULT_BUDGET = 128 * 1024
MIN_BUDGET = 4 * 1024
INITIAL_INPUT_BYTES = 4 * 1024
GRAPH_INLINE_BYTES = 16 * 1024
RUNTIME_INLINE_BYTES = 8 * 1024
RECEIPT_RING = 512
REPORT_BYTES = 2048  # room kept for the truncation report the trimmer stamps in
MIN_EXCERPT_ROOM = 1024  # less shows no excerpt worth reading every transcript for


# What each specialist sees is a column of its row in the specialist table (active_memory.roles).
SPECIALISTS = ROLE_BY_NAME


@dataclass(frozen=True, slots=True)
class EvidenceBundle:
    """The evidence one specialist receives. ``serialized`` is what goes into its context."""

    specialist: str
    payload: Mapping[str, Any]
    serialized: str
    truncation: TruncationReport
    private_files: Mapping[str, Path]

    @property
    def size_bytes(self) -> int:
        return len(self.serialized.encode("utf-8"))


def _check_lessons(lessons: Sequence[Mapping[str, Any]], needs: RoleRow) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, lesson in enumerate(lessons):
        if not isinstance(lesson, Mapping):
            raise EvidenceError(f"lessons[{index}] must be a card object, got {lesson!r}")
        lesson_id, revision = lesson.get("id"), lesson.get("revision")
        if (
            not isinstance(lesson_id, str)
            or isinstance(revision, bool)
            or not (isinstance(revision, int) and revision >= 1)
        ):
            raise EvidenceError(f"lessons[{index}] needs a string id and a revision >= 1")
        scope = lesson.get("scope")
        kind = scope.get("kind") if isinstance(scope, Mapping) else None
        if kind is not None and kind != needs.scope:
            raise EvidenceError(
                f"lesson {lesson_id!r} has scope {kind!r}; a {needs.scope} specialist only "
                f"receives {needs.scope} lessons"
            )
        out.append(json.loads(canonical_json(lesson)))
    return out


def _deliveries(
    deliveries: Sequence[Delivery], before_failures: Mapping[str, int] = MappingProxyType({})
) -> list[dict[str, Any]]:
    """One entry per ``id@revision``: how often, where and how it was handed over, (when the
    record names them) the receipts of the tool calls its hook deliveries rode on, and (when
    any) how many deliveries reached a conversation before it failed (``before_failures``)."""
    grouped: dict[str, list[Delivery]] = {}
    for delivery in deliveries:
        grouped.setdefault(delivery.key, []).append(delivery)
    out: list[dict[str, Any]] = []
    for key in sorted(grouped):
        items = grouped[key]
        refs = sorted({f"exec:{d.execution}" for d in items if d.execution})
        out.append(
            {
                "lesson": key,
                "count": len(items),
                "channels": sorted({d.channel for d in items}),
                "nodes": sorted({d.node_id for d in items})[:16],
                "conversations": len({d.conversation_id for d in items}),
                "executions": refs[:16],
            }
        )
        receipts = sorted({d.receipt_seq for d in items if d.receipt_seq is not None})
        if receipts:  # records made before deliveries named their receipt have none
            out[-1]["receipts"] = [f"receipt:{seq}" for seq in receipts[:16]]
        if before_failures.get(key):  # additive: absent when the card preceded no failure
            out[-1]["before_failures"] = before_failures[key]
    return out


def _receipts(record: RunRecord, log: CutLog, paths: PathRewriter) -> list[dict[str, Any]]:
    receipts = sorted(record.receipts, key=lambda receipt: receipt.seq)
    if len(receipts) > RECEIPT_RING:
        half = RECEIPT_RING // 2
        log.add(
            "receipts",
            f"receipt ring of {RECEIPT_RING}: the first and the latest kept",
            count=len(receipts) - RECEIPT_RING,
        )
        receipts = receipts[:half] + receipts[-half:]
    return [
        {
            "ref": f"receipt:{receipt.seq}",
            "execution": None if receipt.execution is None else f"exec:{receipt.execution}",
            "time_ms": receipt.time_ms,
            "tool": redact_text(receipt.tool),
            "paths": [redact_text(paths.text(path)) for path in receipt.paths[:8]],
        }
        for receipt in receipts
    ]


def _executions(
    record: RunRecord, needs: RoleRow, completion_bytes: int, log: CutLog, paths: PathRewriter
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for execution in record.executions:
        node = record.graph.node(execution.node_id)
        item: dict[str, Any] = {
            "ref": execution.ref,
            "node": execution.node_id,
            "node_kind": node.kind if node else None,
            "occurrence": execution.occurrence,
            "attempt": execution.attempt,
            "status": execution.status,
            "started_ms": execution.started_ms,
            "ended_ms": execution.ended_ms,
            "conversation": execution.conversation_id,
        }
        if execution.unavailable:
            item["unavailable"] = execution.unavailable
        if needs.completions and execution.completion is not None:
            text, cut = redact_and_cut(paths.text(execution.completion), completion_bytes)
            item["completion"] = text
            log.add(
                "executions[].completion",
                f"completion longer than {completion_bytes} bytes cut with a marker",
                count=int(cut > 0),
                size=cut,
                ref=execution.ref,
            )
        out.append(item)
    return out


def _inline(value: Any, max_bytes: int, section: str, log: CutLog) -> Any:
    def note(cut: int) -> None:
        log.add(section, f"inline copy limited to {max_bytes} bytes", size=cut)

    shrunk = shrink_strings(value, max_bytes, on_cut=note)
    if json_size(shrunk) <= max_bytes:
        return shrunk
    log.add(section, f"inline copy over {max_bytes} bytes replaced by the private file")
    return None


def _private_files(
    record: RunRecord, folder: Path, runtime: Any, initial_input: str | None
) -> dict[str, str]:
    names = {
        "graph": write_private_file(
            folder, "graph.json", canonical_json(redact_value(record.graph.raw, keys=False))
        ),
        "runtime": write_private_file(
            folder, "runtime.json", json.dumps(runtime, indent=2, sort_keys=True) + "\n"
        ),
    }
    if initial_input is not None:
        names["initial_input"] = write_private_file(folder, "initial-input.txt", initial_input)
    return names


def _checkout_path(checkout: Checkout, paths: PathRewriter) -> str:
    """An inspected checkout keeps its path (the tools and a replay's relocation key on it); a
    working folder of unknown commit, such as a session's ``cwd``, only says where the run
    happened, so its home reads ``~``."""
    path = str(checkout.path)
    return path if checkout.commit is not None else paths.home_only(path)


def _workspace(record: RunRecord) -> str | None:
    """Where the run worked: its checkout, else the session's ``cwd``."""
    if record.checkout is not None:
        return str(record.checkout.path)
    cwd = record.runtime.get("cwd")
    return cwd if isinstance(cwd, str) else None


def _transcript_budget(payload: dict[str, Any], budget: int) -> tuple[int, int]:
    """What the excerpts may weigh, and each record: the budget less what the payload already
    holds and the report to come, so final trimming has little to cut (the transcript budget
    charges each excerpt's own fields while it holds a record).

    Receipts and completions count for at most an eighth each: final trimming shrinks them
    before it empties an excerpt. A record may take a sixteenth of the budget, and less when
    there are many executions, so each keeps one.
    """
    receipts = json_size(payload.get("receipts", []))
    completions = sum(json_size(item.get("completion", "")) for item in payload["executions"])
    rest = json_size(payload) - receipts - completions
    overhead = rest + min(receipts, budget // 8) + min(completions, budget // 8)
    room = max(0, budget - overhead - REPORT_BYTES)
    executions = max(1, len(payload["executions"]))
    record = max(256, min(budget // 16, room // executions - EXCERPT_BYTES - 48))
    return room, record


def _fit_executions(
    payload: dict[str, Any],
    budget: int,
    log: CutLog,
    verifiers: frozenset[str],
    *,
    share: int,
    receipts: int,
) -> None:
    """The execution listing within what the budget leaves it; whole entries only within
    ``1/share`` of that, less an eighth for ``receipts`` (when shown), so transcripts and
    receipts keep room. Executions that do not fit at all are counted by node."""
    room = budget - json_size({**payload, "executions": []}) - REPORT_BYTES
    whole = (room - min(receipts * 120, budget // 8)) // share
    items = payload["executions"]
    if sum(json_size(item) - json_size(item.get("completion", "")) for item in items) > whole:
        listed, left_out = fit_listing(items, room, log, verifiers, whole_room=whole)
        payload["executions"] = listed
        if left_out:
            payload["executions_left_out"] = left_out


def _log_excerpt_cuts(excerpt: Excerpt, log: CutLog) -> None:
    for section, reason, count, size in (
        ("transcripts[].records", "transcript budget: routine records first, then the oldest, "
         "reclaimed from the execution holding the most", excerpt.records_dropped,
         excerpt.bytes_dropped),
        ("transcripts[].records[].text", "record too long: cut with a marker",
         excerpt.records_cut, excerpt.bytes_cut),
        ("transcripts[].records[].text", "cut by the session source before the evidence was "
         "built (its marker counts the bytes)", excerpt.source_cuts, excerpt.source_cut_bytes),
    ):  # fmt: skip
        log.add(section, reason, count=count, size=size, ref=excerpt.execution)
    if excerpt.unavailable:
        log.add("transcripts", excerpt.unavailable, ref=excerpt.execution)
    elif not excerpt.records and excerpt.records_total:
        log.add(
            "transcripts",
            "no record of this execution fits the budget (its excerpt is left out)",
            ref=excerpt.execution,
        )


MAX_EXISTING_LESSONS = 200


def _existing(lessons: Sequence[Mapping[str, Any]], log: CutLog) -> list[dict[str, Any]]:
    """What discovery needs to avoid a duplicate: each lesson's id, title and where it
    applies (its node, or its associations); at most MAX_EXISTING_LESSONS, cut logged."""
    out: list[dict[str, Any]] = []
    for lesson in lessons[:MAX_EXISTING_LESSONS]:
        scope = lesson.get("scope") or {}
        entry: dict[str, Any] = {"id": lesson.get("id"), "title": lesson.get("title")}
        if scope.get("kind") == "graph":
            entry["node_id"] = scope.get("node_id")
        else:
            for key in ("files", "folders", "identifiers", "keyword_groups"):
                entry[key] = scope.get(key, [])
        out.append(json.loads(canonical_json(entry)))
    log.add(
        "existing_lessons",
        f"more than {MAX_EXISTING_LESSONS} lessons in scope",
        count=max(0, len(lessons) - MAX_EXISTING_LESSONS),
    )
    return out


def build_evidence(
    record: RunRecord,
    specialist: str,
    *,
    private_dir: str | Path,
    budget_bytes: int = DEFAULT_BUDGET,
    lessons: Sequence[Mapping[str, Any]] = (),
    lesson_changes: Sequence[Mapping[str, Any]] = (),
    existing_lessons: Sequence[Mapping[str, Any]] = (),
    cancel: Cancellation | None = None,
    page_limits: PageLimits | None = None,
) -> EvidenceBundle:
    """The evidence ``specialist`` receives about ``record``, at most ``budget_bytes`` long.

    ``lessons`` are the supplied cards (each with ``id`` and ``revision``) and ``lesson_changes``
    the before/current changes since the run's snapshot; both reach the specialist whole.
    ``existing_lessons`` are, for a discovery specialist, the lessons already in its scope: it
    gets their id, title and node or associations (``existing_lessons``) and the delivery
    manifest (``deliveries``), so it can tell "no lessons" from "not shown".
    Raises EvidenceError for an unknown specialist, a budget under 4 KiB, lessons of the other
    scope or lessons that alone overflow the budget; EvidenceCancelled once ``cancel`` is set.
    """
    needs = SPECIALISTS.get(specialist)
    if needs is None:
        raise EvidenceError(
            f"unknown specialist {specialist!r}; choose one of {sorted(SPECIALISTS)}"
        )
    if budget_bytes < MIN_BUDGET:
        raise EvidenceError(f"budget {budget_bytes!r} bytes is below the minimum of {MIN_BUDGET}")
    supplied = _check_lessons(lessons, needs)
    changes = [json.loads(canonical_json(change)) for change in lesson_changes]
    log = CutLog()
    log_source_cuts(record, log)
    cwd = record.runtime.get("cwd")
    # A session's cwd names the same tree when the checkout was inspected elsewhere.
    paths = PathRewriter(_workspace(record), cwd if isinstance(cwd, str) else None)
    runtime = paths.value(redact_value(record.runtime))
    folder = prepare_private_dir(private_dir)
    redacted_input = (
        None if record.initial_input is None else redact_text(paths.text(record.initial_input))
    )
    files = _private_files(record, folder, runtime, redacted_input)

    run: dict[str, Any] = {
        "run_id": record.run_id,
        "graph_name": record.graph.name,
        "graph_hash": record.graph_hash,
        "outcome": None if record.outcome is None else record.outcome.model_dump(),
        "executions_total": len(record.executions),
        "receipts_total": receipts_made(record, log if needs.receipts else None),
    }
    if redacted_input is not None:
        text, cut = cut_text(redacted_input, INITIAL_INPUT_BYTES)
        run["initial_input"] = text
        log.add("run.initial_input", f"longer than {INITIAL_INPUT_BYTES} bytes", count=int(cut > 0))
    payload: dict[str, Any] = {
        "format": EVIDENCE_FORMAT,
        "specialist": specialist,
        "run": run,
        "private_files": files,
        "executions": _executions(record, needs, min(8192, budget_bytes // 8), log, paths),
    }
    if needs.graph:
        raw = redact_value(record.graph.raw, keys=False)
        graph = _inline(json.loads(canonical_json(raw)), GRAPH_INLINE_BYTES, "graph", log)
        if graph is None:
            graph = {
                "name": record.graph.name,
                "nodes": [{"id": n.id, "kind": n.kind} for n in record.graph.nodes],
            }
            graph = _inline(graph, GRAPH_INLINE_BYTES, "graph", log)
        payload["graph"] = graph
    if needs.maintenance:
        payload["runtime"] = _inline(
            json.loads(canonical_json(runtime)), RUNTIME_INLINE_BYTES, "runtime", log
        )
        payload["deliveries"] = _deliveries(record.deliveries, deliveries_before_failures(record))
        payload["lessons"] = supplied
        payload["lesson_changes"] = changes
    else:
        payload["deliveries"] = _deliveries(record.deliveries)
        payload["existing_lessons"] = _existing(existing_lessons, log)
    if needs.checkout and record.checkout is not None:
        payload["checkout"] = {
            "path": _checkout_path(record.checkout, paths),
            "repository": record.checkout.repository,
            "commit": record.checkout.commit,
        }
    verifiers = frozenset(node.id for node in record.graph.nodes if node.kind == "verifier")
    tiers: dict[str, list[int]] = {}
    _fit_executions(
        payload,
        budget_bytes,
        log,
        verifiers,
        share=2 if needs.transcripts else 1,
        receipts=min(len(record.receipts), RECEIPT_RING) if needs.receipts else 0,
    )
    if needs.receipts:
        payload["receipts"] = _receipts(record, log, paths)
    if needs.transcripts:
        room, record_bytes = _transcript_budget(payload, budget_bytes)
        if room < MIN_EXCERPT_ROOM:
            # The listing took the budget: reading every transcript would show nothing.
            read = sum(1 for execution in record.executions if execution.transcript is not None)
            log.add("transcripts", "the execution listing leaves no room for excerpts", count=read)
            payload["transcripts"] = []
        else:
            reading = TranscriptReading(
                page_limits, cancel, citable_receipts(record), paths.text, verifiers
            )
            excerpts = collect_to_fill(
                record.executions, reading, room=room, record_bytes=record_bytes
            )
            for excerpt in excerpts:
                _log_excerpt_cuts(excerpt, log)
                tiers[excerpt.execution] = list(excerpt.tiers)
            payload["transcripts"] = [excerpt.model_dump(mode="json") for excerpt in excerpts
                                      if excerpt.records or excerpt.unavailable]  # fmt: skip
        unavailable = unavailable_refs(record)
        for item in payload["transcripts"]:
            missing = unavailable.get(item["execution"])
            if missing and "unavailable" not in item:
                item["unavailable"] = missing
                log.add("transcripts", missing, ref=item["execution"])
        copies = CopyWriter(folder, record.executions, citable_receipts(record), paths.text, cancel)
        copy_cut_transcripts(payload["transcripts"], copies, note=True)
        copy_left_out(record.executions, payload["transcripts"], copies)
        not_copied = copies.not_copied_note()
        if not_copied is not None:
            payload["transcripts_not_copied"] = not_copied
            log.add("transcripts", "complete copies over their cap", count=not_copied["executions"])
        if copies.copies:
            files["transcripts"] = COPY_FOLDER

    serialized = Trimmer(payload, budget_bytes, log, verifiers, tiers).run()
    private = {key: folder / name for key, name in files.items()}
    if needs.transcripts:
        # Final trimming may cut excerpts the transcript budget left whole: their copies too.
        copy_cut_transcripts(payload["transcripts"], copies, note=False)
        copies.finish()
        if copies.copies:
            private["transcripts"] = folder / COPY_FOLDER
    size = len(serialized.encode("utf-8"))
    if size > budget_bytes:
        raise EvidenceError(
            f"the evidence for {specialist!r} needs {size} bytes even after trimming, over the "
            f"budget of {budget_bytes}; raise the budget or supply fewer lessons per batch"
        )
    return EvidenceBundle(
        specialist=specialist,
        payload=MappingProxyType(payload),
        serialized=serialized,
        truncation=log.report(budget_bytes, size),
        private_files=MappingProxyType(private),
    )
