"""One specialist session on its own, for prompt authors: the raw answer and its admission.

:func:`try_specialist` takes the postmortem's own :class:`~.options.PostmortemOptions` and
prepares exactly what a postmortem would (snapshot, lesson changes, provenance, evidence, the
binding and its provider), runs ONE session of one specialist (for maintenance, one of the
planned batches, with the change entries the postmortem would send with it) and runs admission
on the answer. It never publishes. Whatever the session's outcome the result shows it: the raw
answer (valid or not), turns, tool calls, tokens, retries and repair, and for a failed session
its status, code and message, classified as the postmortem's report classifies them.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from active_memory.admission import contract_sha256
from active_memory.admission.validate import admit_discovery, admit_maintenance
from active_memory.agents.prompts import prompt_sha256
from active_memory.agents.providers.registry import close_provider
from active_memory.agents.specialists import SPECS, Batch, Meter, SessionSubject, answer_session
from active_memory.agents.tool_loop import Session
from active_memory.errors import ActiveMemoryError, ContractViolation, PostmortemError
from active_memory.models.changes import Rejection
from active_memory.models.lessons import LessonDraft
from active_memory.models.runs import RunRecord
from active_memory.postmortem.binding import (
    provider_route,
    resolve_source_node,
    specialist_binding,
)
from active_memory.postmortem.failures import classify, in_repair
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import (
    Prepared,
    Unprepared,
    existing_lessons,
    maintenance_input,
    prepare,
)
from active_memory.postmortem.report import (
    CheckoutStatus,
    ModelTraffic,
    SpecialistStatus,
    checkout_note,
)

__all__ = ["TrialResult", "planned_batch", "prepare_specialist", "try_specialist"]


class TrialResult(ModelTraffic):
    """One session's raw answer and what admission made of it, or why the session failed.

    ``complete`` is False when the whole answer was refused (shape, or maintenance coverage) or
    the session failed (then ``status``, ``error_code`` and ``error`` say why, as a report
    would); ``accepted`` counts admitted decisions or proposals. ``answer_json`` is the last
    raw answer the model gave, valid or not, or the text it wrote instead of one (None when it
    wrote nothing). ``contract_errors`` are what the last answer broke, as the session told
    the model, also when the repair turn then timed out (a report counts them only: they may
    quote lesson text). ``investigation_max_tokens`` and ``answer_max_tokens`` are the output
    caps its turns asked for. The JSON form
    (``specialist run --json``) holds it parsed as ``answer`` (None when it is not JSON) and
    raw as ``raw_answer``, and adds :attr:`notes`.
    """

    model_config = ConfigDict(serialize_by_alias=True)

    specialist: str
    batch: int
    batches: int
    status: SpecialistStatus | Literal["accepted", "refused"]
    answer_json: str | None = Field(serialization_alias="answer")
    complete: bool
    accepted: int
    rejections: tuple[Rejection, ...]
    input_tokens: int
    output_tokens: int
    turns: int
    tool_calls: int
    # Turns whose call the model wrote as text, taken as calls (providers/text_calls.py).
    text_calls: int = 0
    retries: int = 0
    repaired: bool = False
    investigation_max_tokens: int = 0
    answer_max_tokens: int = 0
    prompt_sha256: str
    contract_sha256: str
    output: str | None = None
    error: str | None = None
    error_code: str | None = None
    contract_errors: tuple[str, ...] = ()
    checkout: CheckoutStatus | None = None
    # What admission accepted, one short line each: "<id> <action>" for a maintenance
    # decision, the title for a discovery proposal (``specialist eval`` diffs these).
    admitted: tuple[str, ...] = ()
    # The lessons the admitted items would publish (discovery drafts, adapt replacements), for
    # ``specialist eval``'s replay of the runs that followed; never in the JSON form.
    drafts: tuple[LessonDraft, ...] = Field((), exclude=True)

    @field_serializer("answer_json")
    def _parsed(self, answer_json: str | None) -> Any:
        if answer_json is None:
            return None
        try:
            return json.loads(answer_json)
        except ValueError:
            return None

    @model_serializer(mode="wrap")
    def _with_notes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out["raw_answer"] = self.answer_json
        out["notes"] = list(self.notes)
        return out

    @property
    def notes(self) -> tuple[str, ...]:
        """Why this specialist's repository items could not be verified, if so."""
        note = (
            checkout_note(self.checkout) if SPECS[self.specialist].scope == "repository" else None
        )
        return (note,) if note is not None else ()


async def try_specialist(
    record: RunRecord, name: str, options: PostmortemOptions, *, batch: int = 0
) -> TrialResult:
    """Run batch ``batch`` of specialist ``name`` once and admit its answer; never publishes.

    The preparation, the binding and the batches are the postmortem's own, and the session's
    labels are the ones the postmortem would use on its first pass, so a recording of a
    postmortem replays here batch by batch. Raises PostmortemError for a bad specialist, batch or
    preparation; a failed session (a provider error, a contract violation, a refusal...) is a
    result with its status, code and message, and what the session had spent.
    """
    prepared = await prepare_specialist(record, name, options)
    try:
        return await _trial(record, name, options, prepared, batch)
    finally:
        if prepared.owned_provider is not None:
            await close_provider(prepared.owned_provider)


async def prepare_specialist(record: RunRecord, name: str, options: PostmortemOptions) -> Prepared:
    """The postmortem's own preparation (source node, binding, deadline, snapshot, evidence)
    for one session of specialist ``name``; PostmortemError for an unknown specialist or a
    preparation that failed."""
    if name not in SPECS:
        raise PostmortemError(f"unknown specialist {name!r}; choose one of {', '.join(SPECS)}")
    node = resolve_source_node(record.graph, options.config.postmortem.source_node)
    binding = specialist_binding(node, options.override, options.provider)
    deadline = time.monotonic() + options.config.postmortem.timeout_ms / 1000
    try:
        return await prepare(record, options, binding, deadline=deadline)
    except Unprepared as unprepared:
        raise PostmortemError(unprepared.failure.message) from None


def planned_batch(
    record: RunRecord, name: str, options: PostmortemOptions, prepared: Prepared, batch: int
) -> tuple[Batch, int]:
    """Batch ``batch`` of the postmortem's plan for ``name`` and how many there are;
    PostmortemError for maintenance with nothing to decide or a batch out of range."""
    spec = SPECS[name]
    given = maintenance_input(
        record,
        name,
        prepared.snapshot.lessons,
        frozen=options.frozen_lessons,
        budget=options.evidence_budget,
    )
    count = len(given.batches) if spec.maintenance else 1
    if spec.maintenance and not given.batches:
        raise PostmortemError(f"{name} has no supplied lessons in this store: nothing to decide")
    if not 0 <= batch < count:
        raise PostmortemError(f"{name} has {count} batch(es) (0 to {count - 1}); got {batch}")
    return (given.batches[batch] if spec.maintenance else Batch(lessons=())), count


async def _trial(
    record: RunRecord, name: str, options: PostmortemOptions, prepared: Prepared, batch: int
) -> TrialResult:
    spec = SPECS[name]
    supplied, count = planned_batch(record, name, options, prepared, batch)
    env = prepared.env
    meter = Meter(name)
    route = provider_route(env.binding, env.provider)
    common: dict[str, Any] = {
        "specialist": name,
        "batch": batch,
        "batches": count,
        "prompt_sha256": prompt_sha256(name),
        "contract_sha256": contract_sha256(name),
        "checkout": prepared.checkout,
        "provider": route.provider,
        "lane": route.lane,
        "host": route.host,
        "model": route.model,
        "output": getattr(env.provider, "output", None),
    }
    try:
        subject = SessionSubject(
            f"batch {batch + 1} of {count}",
            supplied.lessons,
            supplied.changes,
            existing_lessons(prepared.snapshot.lessons, name),
        )
        session = await answer_session(env, spec, meter, subject, batch=batch)
    except (ActiveMemoryError, TimeoutError) as error:
        failure = in_repair(classify(error, cancelled=False), meter.sessions)
        last = meter.sessions[-1] if meter.sessions else None
        # A repair turn that ended without an answer (a timeout) still shows what it repaired.
        repaired = last.repair_errors if last is not None else ()
        return TrialResult(
            **common,
            **_session_counts(last),
            status=failure.status,
            complete=False,
            accepted=0,
            rejections=(),
            error=failure.message,
            error_code=failure.code,
            contract_errors=error.errors if isinstance(error, ContractViolation) else repaired,
        )
    if spec.maintenance:
        maintained = admit_maintenance(
            session.answer, name, supplied.lessons, env.admission, read_paths=session.read_paths
        )
        complete, accepted, rejections = (
            maintained.complete,
            len(maintained.decisions),
            maintained.rejections,
        )
        admitted = tuple(f"{d.decision.id} {d.applied}" for d in maintained.decisions)
        drafts = tuple(
            d.decision.replacement
            for d in maintained.decisions
            if d.applied == "adapt" and d.decision.replacement is not None
        )
    else:
        discovered = admit_discovery(
            session.answer, name, env.admission, read_paths=session.read_paths
        )
        complete, accepted, rejections = (
            discovered.complete,
            len(discovered.proposals),
            discovered.rejections,
        )
        admitted = tuple(item.proposal.draft.title for item in discovered.proposals)
        drafts = tuple(item.proposal.draft for item in discovered.proposals)
    return TrialResult(
        **common,
        **_session_counts(meter.sessions[-1]),
        status="accepted" if complete else "refused",
        complete=complete,
        accepted=accepted,
        rejections=rejections,
        error_code=None if complete else "answer_refused",
        # Items the answer left malformed after its repair turn: admission refused them alone.
        contract_errors=session.result.item_errors,
        admitted=admitted,
        drafts=drafts,
    )


def _session_counts(session: Session | None) -> dict[str, Any]:
    """What a session spent, read from its live counters (a failed session's too)."""
    if session is None:
        return {"answer_json": None, "input_tokens": 0, "output_tokens": 0, "turns": 0,
                "tool_calls": 0, "text_calls": 0, "retries": 0, "repaired": False,
                "answered_model": None, "investigation_max_tokens": 0,
                "answer_max_tokens": 0}  # fmt: skip
    return {
        "answer_json": session.raw_answer,
        "input_tokens": session.usage.input_tokens,
        "output_tokens": session.usage.output_tokens,
        "turns": session.turns,
        "tool_calls": session.tool_calls,
        "text_calls": session.text_calls,
        "retries": session.retries,
        "repaired": session.repaired,
        "answered_model": session.answered_model,
        "investigation_max_tokens": session.investigation_cap,
        "answer_max_tokens": session.answer_cap,
    }
