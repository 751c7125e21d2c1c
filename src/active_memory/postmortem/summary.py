"""Assembling the report: one specialist's entry from its meter and outcome, the overall status,
and the run log projection (allow-listed fields only, never lesson text)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from active_memory.agents.specialists import Meter, Validated
from active_memory.errors import RunLogError
from active_memory.models.changes import Rejection
from active_memory.models.runs import Binding, RunRecord
from active_memory.postmortem.failures import Failure
from active_memory.postmortem.report import (
    DowngradeNote,
    PostmortemReport,
    PostmortemStatus,
    SpecialistReport,
    SpecialistStatus,
)
from active_memory.runlog import RunLog

__all__ = ["append_report", "overall_status", "specialist_report"]

# The run log caps list fields; ids beyond it stay in the report.
_MAX_LOGGED_IDS = 256
_log = logging.getLogger(__name__)


def specialist_report(
    name: str,
    meter: Meter | None,
    result: Validated | None,
    failure: Failure | None,
    *,
    dry_run: bool,
) -> SpecialistReport:
    """The entry of one specialist; a specialist without a meter never ran (scope off)."""
    if meter is None:
        return SpecialistReport(specialist=name, status="skipped")
    stages: dict[str, int] = {}
    for rejection in meter.rejections:
        stages[rejection.stage] = stages.get(rejection.stage, 0) + 1
    decisions: dict[str, int] = {}
    downgrades: tuple[DowngradeNote, ...] = ()
    mutations = 0
    status: SpecialistStatus
    if failure is not None or result is None:
        status = failure.status if failure is not None else "failed"
    else:
        for bound in result.decisions:
            decisions[bound.applied] = decisions.get(bound.applied, 0) + 1
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
        downgrades=downgrades,
        proposals_accepted=len(result.proposals) if result is not None else 0,
        rejections=stages,
        mutations=mutations,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        retries=meter.retries,
        conflict_retries=meter.conflict_retries,
        elapsed_ms=meter.elapsed_ms,
        error=failure.message if failure is not None else None,
        error_code=failure.code if failure is not None else None,
    )


def overall_status(
    reports: Sequence[SpecialistReport], *, cancelled: bool, checkout_changed: bool, dry_run: bool
) -> PostmortemStatus:
    """The most telling status: cancellation, a refused checkout, the deadline, a conflict,
    then failed (all) or partial (some); else completed (or dry_run)."""
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
    failed = [r for r in ran if not r.ok]
    if failed:
        return "failed" if len(failed) == len(ran) else "partial"
    return "dry_run" if dry_run else "completed"


def append_report(
    log: RunLog,
    record: RunRecord,
    report: PostmortemReport,
    *,
    rejections: Sequence[Rejection] = (),
    binding: Binding | None = None,
    reason_code: str | None = None,
) -> None:
    """Append the report's allow-listed projection and each rejection (stage and code, never
    lesson text). A log that cannot be written is a warning, never an error: the postmortem
    must not fail the host's run."""
    try:
        log.append_rejections(record.run_id, rejections)
        _append(log, record, report, binding, reason_code)
    except (RunLogError, OSError) as error:
        _log.warning("could not append the postmortem to the run log: %s", error)


def _append(
    log: RunLog,
    record: RunRecord,
    report: PostmortemReport,
    binding: Binding | None,
    reason_code: str | None,
) -> None:
    run_id = record.run_id
    for specialist in report.specialists:
        ids = [c.id for c in report.changes if c.specialist == specialist.specialist][
            :_MAX_LOGGED_IDS
        ]
        log.append_event(
            "postmortem_specialist",
            run_id=run_id,
            role=specialist.specialist,
            status=specialist.status,
            batches=specialist.batches,
            kept=specialist.decisions.get("keep", 0),
            adapted=specialist.decisions.get("adapt", 0),
            retired=specialist.decisions.get("retire", 0),
            deferred=specialist.decisions.get("defer", 0),
            downgraded=len(specialist.downgrades),
            accepted=specialist.proposals_accepted,
            rejected=specialist.rejected,
            mutations=specialist.mutations,
            ids=ids[:_MAX_LOGGED_IDS],
            input_tokens=specialist.input_tokens,
            output_tokens=specialist.output_tokens,
            conflicts=specialist.conflict_retries,
            duration_ms=specialist.elapsed_ms,
            error_code=specialist.error_code,
            contract_sha256=report.contract_sha256.get(specialist.specialist),
        )
    if reason_code is None and not report.ok:
        # The code of the failure the report's reason names: the run log holds no message.
        reason_code = next((s.error_code for s in report.specialists if s.error_code), None)
    log.append_event(
        "postmortem",
        run_id=run_id,
        status=report.status,
        reason_code=reason_code,
        outcome=record.outcome.status if record.outcome is not None else None,
        node_id=report.source_node,
        provider=binding.provider if binding is not None else None,
        model=binding.model if binding is not None else None,
        effort=binding.effort if binding is not None else None,
        lane=binding.lane if binding is not None else None,
        generation=report.generation_after,
        mutations=len(report.changes),
        published=len(report.published),
        input_tokens=report.input_tokens,
        output_tokens=report.output_tokens,
        duration_ms=report.elapsed_ms,
    )
