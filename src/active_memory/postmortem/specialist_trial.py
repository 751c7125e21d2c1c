"""One specialist session on its own, for prompt authors: the raw answer and its admission.

:func:`try_specialist` prepares exactly what a postmortem would (snapshot, lesson changes,
provenance, evidence), runs ONE session of one specialist (for maintenance, one batch of the
planned batches) and runs admission on the answer. It never publishes. Unlike the postmortem it
raises on failure: the author wants the error itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from active_memory.admission import contract_sha256
from active_memory.admission.validate import admit_discovery, admit_maintenance
from active_memory.agents.prompts import prompt_sha256
from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.specialists import SPECS, Meter, answer_session
from active_memory.agents.tool_loop import SessionLimits
from active_memory.errors import PostmortemError
from active_memory.evidence.builder import DEFAULT_BUDGET
from active_memory.models.changes import Rejection
from active_memory.models.config import RuntimeConfig
from active_memory.models.ids import new_lesson_id
from active_memory.models.runs import Binding, RunRecord
from active_memory.postmortem.batching import plan_batches
from active_memory.postmortem.entry import resolve_source_node
from active_memory.postmortem.report import CheckoutStatus, checkout_note
from active_memory.postmortem.run import PostmortemRun, Unprepared
from active_memory.store.backend import ActiveMemoryBackend

__all__ = ["TrialResult", "try_specialist"]


@dataclass(frozen=True, slots=True)
class TrialResult:
    """One session's raw answer and what admission made of it.

    ``complete`` is False when the whole answer was refused (shape, or maintenance coverage);
    ``accepted`` counts admitted decisions or proposals.
    """

    specialist: str
    batch: int
    batches: int
    answer_json: str
    complete: bool
    accepted: int
    rejections: tuple[Rejection, ...]
    input_tokens: int
    output_tokens: int
    turns: int
    tool_calls: int
    prompt_sha256: str
    contract_sha256: str
    checkout: CheckoutStatus | None = None

    @property
    def notes(self) -> tuple[str, ...]:
        """Why this specialist's repository items could not be verified, if so."""
        note = (
            checkout_note(self.checkout) if SPECS[self.specialist].scope == "repository" else None
        )
        return (note,) if note is not None else ()

    def to_dict(self) -> dict[str, object]:
        return {
            "specialist": self.specialist,
            "batch": self.batch,
            "batches": self.batches,
            "answer": json.loads(self.answer_json),
            "complete": self.complete,
            "accepted": self.accepted,
            "rejections": [r.model_dump(mode="json") for r in self.rejections],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "prompt_sha256": self.prompt_sha256,
            "contract_sha256": self.contract_sha256,
            "checkout": self.checkout,
            "notes": list(self.notes),
        }


async def try_specialist(
    record: RunRecord,
    name: str,
    *,
    config: RuntimeConfig,
    backend: ActiveMemoryBackend,
    provider: ModelProvider,
    private_dir: str | Path,
    binding: Binding | None = None,
    batch: int = 0,
    evidence_budget: int = DEFAULT_BUDGET,
    limits: SessionLimits | None = None,
) -> TrialResult:
    """Run batch ``batch`` of specialist ``name`` once and admit its answer; never publishes.

    The session's labels are the ones the postmortem would use on its first pass, so a
    recording of a postmortem replays here batch by batch.
    """
    if name not in SPECS:
        raise PostmortemError(f"unknown specialist {name!r}; choose one of {', '.join(SPECS)}")
    node = resolve_source_node(record.graph, config.postmortem.source_node)
    run = PostmortemRun(
        record,
        (name,),
        node=node,
        binding=binding,
        config=config,
        backend=backend,
        private_dir=Path(private_dir),
        provider=provider,
        provider_factory=None,
        cancel=None,
        new_id=new_lesson_id,
        evidence_budget=evidence_budget,
        dry_run=True,
        frozen_lessons=None,
        settlement_s=0,
        limits=limits or SessionLimits(),
        on_progress=None,
    )
    try:
        await run.prepare()
    except Unprepared as unprepared:
        raise PostmortemError(unprepared.failure.message) from None
    assert run.env is not None
    assert run.snapshot is not None
    spec = SPECS[name]
    lessons, changes = run.inputs(name, run.snapshot)
    batches = plan_batches(lessons, evidence_budget, {str(c["id"]): c for c in changes})
    count = len(batches) if spec.maintenance else 1
    if spec.maintenance and not batches:
        raise PostmortemError(f"{name} has no supplied lessons in this store: nothing to decide")
    if not 0 <= batch < count:
        raise PostmortemError(f"{name} has {count} batch(es) (0 to {count - 1}); got {batch}")
    meter = Meter(name)
    supplied = batches[batch] if spec.maintenance else ()
    ids = {lesson.id for lesson in supplied}
    live = {lesson.id for lesson in lessons}
    # Changes travel with their lesson's batch; those of lessons no longer live with batch 0.
    own = [c for c in changes if c["id"] in ids or (batch == 0 and c["id"] not in live)]
    session = await answer_session(
        run.env,
        spec,
        meter,
        batch=batch,
        label=f"batch {batch + 1} of {count}",
        lessons=supplied,
        changes=own if spec.maintenance else (),
    )
    if spec.maintenance:
        maintained = admit_maintenance(session.answer, name, supplied, run.env.admission)
        complete, accepted, rejections = (
            maintained.complete,
            len(maintained.decisions),
            maintained.rejections,
        )
    else:
        discovered = admit_discovery(session.answer, name, run.env.admission)
        whole = any(r.stage == "shape" or r.index < 0 for r in discovered.rejections)
        complete, accepted, rejections = (
            not whole,
            len(discovered.proposals),
            discovered.rejections,
        )
    return TrialResult(
        specialist=name,
        batch=batch,
        batches=count,
        answer_json=session.answer_json,
        complete=complete,
        accepted=accepted,
        rejections=rejections,
        input_tokens=session.usage.input_tokens,
        output_tokens=session.usage.output_tokens,
        turns=session.turns,
        tool_calls=session.tool_calls,
        prompt_sha256=prompt_sha256(name),
        contract_sha256=contract_sha256(name),
        checkout=run.checkout,
    )
