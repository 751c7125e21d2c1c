"""A postmortem in the run log: the report's allow-listed projection and its rejections (stage
and code only, never lesson text). The ``postmortem`` record says where the model traffic went
(provider, lane, server host, model); each specialist's record its error code, retries and the
prompt and contract sha256."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from active_memory.errors import RunLogError
from active_memory.models.changes import Rejection
from active_memory.models.runs import Binding, RunRecord
from active_memory.postmortem.report import PostmortemReport
from active_memory.runlog import RunLog

__all__ = ["append_report"]

# The run log caps list fields; ids beyond it stay in the report.
_MAX_LOGGED_IDS = 256
_log = logging.getLogger(__name__)
_MODEL_TOKEN = re.compile(r"[A-Za-z0-9_.:@/+=-]{1,200}")


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


def _token(name: str | None) -> str | None:
    """A model name as the server sent it, kept only when it is a log token: a server may send
    anything, and a log that refuses the record would lose the whole postmortem's line."""
    return name if name is not None and _MODEL_TOKEN.fullmatch(name) else None


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
            quarantined=specialist.quarantined,
            rejected=specialist.rejected,
            mutations=specialist.mutations,
            ids=ids[:_MAX_LOGGED_IDS],
            # A keep publishes nothing: this is its only trace (capped; the report keeps all).
            keep_ids=list(specialist.keep_ids[:_MAX_LOGGED_IDS]),
            dry_run=report.dry_run,
            **specialist.tokens,
            investigation_max_tokens=specialist.investigation_max_tokens,
            answer_max_tokens=specialist.answer_max_tokens,
            retries=specialist.retries,
            conflicts=specialist.conflict_retries,
            text_calls=specialist.text_calls,
            answered_model=_token(specialist.answered_model),
            duration_ms=specialist.elapsed_ms,
            error_code=specialist.error_code,
            contract_sha256=report.contract_sha256.get(specialist.specialist),
            prompt_sha256=report.prompt_sha256.get(specialist.specialist),
        )
    for held in report.quarantined:
        log.append_event(
            "quarantine",
            run_id=run_id,
            role=held.specialist,
            id=held.id,
            signals=list(held.signals),
            kept=held.kept,
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
        provider=report.provider,
        lane=report.lane,
        # An IPv6 host loses its brackets: log values are tokens of [A-Za-z0-9_.:@/+=-].
        host=report.host.translate({ord("["): None, ord("]"): None}) if report.host else None,
        model=report.model,
        answered_model=_token(report.answered_model),
        effort=binding.effort if binding is not None else None,
        generation=report.generation_after,
        mutations=len(report.changes),
        published=len(report.published),
        quarantined=len(report.quarantined),
        **report.tokens,
        retries=report.retries,
        duration_ms=report.elapsed_ms,
    )
