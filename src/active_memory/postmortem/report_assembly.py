"""Report assembly: each specialist's entry from its meter and outcome, the overall status, and
the whole :class:`PostmortemReport` (also the one a skipped postmortem returns)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from active_memory.admission import contract_sha256
from active_memory.agents.prompts import SPECIALISTS, prompt_sha256
from active_memory.agents.specialists import Meter, Validated
from active_memory.daemon_threads import in_daemon_thread
from active_memory.models.config import RuntimeConfig
from active_memory.models.runs import RunRecord
from active_memory.postmortem.binding import provider_route
from active_memory.postmortem.failures import Failure
from active_memory.postmortem.report import (
    DowngradeNote,
    PostmortemReport,
    PostmortemStatus,
    SpecialistReport,
    SpecialistStatus,
)
from active_memory.postmortem.state import ReviewState

__all__ = ["assemble_report", "overall_status", "skipped_report", "specialist_report"]

_log = logging.getLogger(__name__)


def _hashes() -> tuple[dict[str, str], dict[str, str]]:
    return (
        {name: prompt_sha256(name) for name in SPECIALISTS},
        {name: contract_sha256(name) for name in SPECIALISTS},
    )


def specialist_report(
    name: str,
    meter: Meter | None,
    result: Validated | None,
    failure: Failure | None,
    *,
    dry_run: bool,
    skipped: str | None = None,
) -> SpecialistReport:
    """The entry of one specialist; a specialist without a meter never ran (scope off), one
    with a ``skipped`` reason was not started because it could not succeed on this run."""
    if meter is None or skipped is not None:
        return SpecialistReport(specialist=name, status="skipped", skipped_reason=skipped)
    stages: dict[str, int] = {}
    for rejection in meter.rejections:
        stages[rejection.stage] = stages.get(rejection.stage, 0) + 1
    decisions: dict[str, int] = {}
    keep_ids: tuple[str, ...] = ()
    downgrades: tuple[DowngradeNote, ...] = ()
    mutations = 0
    status: SpecialistStatus
    if failure is not None or result is None:
        status = failure.status if failure is not None else "failed"
    else:
        for bound in result.decisions:
            decisions[bound.applied] = decisions.get(bound.applied, 0) + 1
        keep_ids = tuple(bound.id for bound in result.decisions if bound.applied == "keep")
        downgrades = tuple(
            DowngradeNote(id=d.id, action=d.action, reason=d.reason) for d in result.downgrades
        )
        mutations = result.changes
        written: SpecialistStatus = "dry_run" if dry_run else "published"
        status = written if result.changes else "nothing_to_do"
    usage = meter.usage
    return SpecialistReport(
        specialist=name,
        status=status,
        batches=meter.batches,
        decisions=decisions,
        keep_ids=keep_ids,
        downgrades=downgrades,
        proposals_accepted=len(result.proposals) if result is not None else 0,
        quarantined=len(result.quarantined) if result is not None else 0,
        rejections=stages,
        mutations=mutations,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        investigation_max_tokens=max((s.investigation_cap for s in meter.sessions), default=0),
        answer_max_tokens=max((s.answer_cap for s in meter.sessions), default=0),
        retries=meter.retries,
        conflict_retries=meter.conflict_retries,
        text_calls=meter.text_calls,
        answered_model=meter.answered_model,
        elapsed_ms=meter.elapsed_ms,
        error=failure.message if failure is not None else None,
        error_code=failure.code if failure is not None else None,
    )


def overall_status(
    reports: Sequence[SpecialistReport], *, cancelled: bool, checkout_changed: bool, dry_run: bool
) -> PostmortemStatus:
    """The most telling status: cancellation, a refused checkout, the deadline, a conflict,
    then failed or partial; else completed (or dry_run).

    With a failure, ``partial`` needs a specialist that had work (a session: ``batches`` > 0)
    and succeeded; a maintenance specialist with no lessons to decide is ``nothing_to_do``
    without asking the model, which says nothing about whether the review worked: when every
    specialist with work failed, the postmortem ``failed``."""
    ran = [r for r in reports if r.status != "skipped"]
    statuses = {r.status for r in ran}
    if cancelled and "cancelled" in statuses:
        return "cancelled"
    if checkout_changed:
        return "checkout_changed"
    if "timed_out" in statuses:
        return "timed_out"
    if "conflict" in statuses:
        return "conflict"
    if any(not r.ok for r in ran):
        worked = any(r.ok and r.batches > 0 for r in ran)
        return "partial" if worked else "failed"
    return "dry_run" if dry_run else "completed"


def skipped_report(record: RunRecord, config: RuntimeConfig) -> tuple[PostmortemReport, str]:
    """The report of a postmortem that does not run, and its run log reason code."""
    if not config.postmortem.enabled:
        reason, code = "the postmortem is disabled (globalAgents.postmortem.enabled)", "disabled"
    else:
        reason, code = "both memory scopes are off (activeMemory.graph and .repository)", "off"
    prompts, contracts = _hashes()
    report = PostmortemReport(
        run_id=record.run_id,
        status="skipped",
        reason=reason,
        specialists=tuple(
            SpecialistReport(specialist=name, status="skipped") for name in SPECIALISTS
        ),
        prompt_sha256=prompts,
        contract_sha256=contracts,
    )
    return report, code


async def _generation_after(state: ReviewState) -> int | None:
    try:
        return await asyncio.wait_for(in_daemon_thread(state.options.backend.generation), 5)
    except Exception as error:
        # The report matters more than this figure: a store that cannot say is "unknown".
        _log.warning("the store generation after the postmortem is unknown: %s", error)
        return None


async def assemble_report(state: ReviewState) -> PostmortemReport:
    """The report of a settled postmortem; asks the store for its generation afterwards."""
    dry_run = state.options.dry_run
    reports = tuple(
        specialist_report(
            name,
            state.meters.get(name),
            state.results.get(name),
            state.failures.get(name),
            dry_run=dry_run,
            skipped=state.skipped.get(name),
        )
        for name in SPECIALISTS
    )
    status = overall_status(
        reports,
        cancelled=state.cancelled,
        checkout_changed=state.checkout_changed,
        dry_run=dry_run,
    )
    reason = None
    if status not in ("completed", "dry_run"):
        reason = next((r.error for r in reports if r.error), None)
    prepared = state.prepared
    prompts, contracts = _hashes()
    route = provider_route(state.binding, prepared.env.provider if prepared else None)
    return PostmortemReport(
        run_id=state.record.run_id,
        status=status,
        specialists=reports,
        changes=tuple(state.changes),
        quarantined=tuple(state.quarantined),
        reason=reason,
        source_node=state.node.id,
        provider=route.provider,
        lane=route.lane,
        host=route.host,
        model=route.model,
        answered_model=next((r.answered_model for r in reports if r.answered_model), None),
        generation_before=prepared.snapshot.generation if prepared is not None else None,
        generation_after=await _generation_after(state),
        prompt_sha256=prompts,
        contract_sha256=contracts,
        elapsed_ms=int((time.monotonic() - state.started) * 1000),
        dry_run=dry_run,
        checkout=prepared.checkout if prepared is not None else None,
    )
