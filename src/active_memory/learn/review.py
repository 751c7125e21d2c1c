"""The learn worker's reviewer: one session's postmortem, on its own harness lane, published to
the store.

``prepare`` converts the session file into a run record (as ``active-memory postmortem FILE``
does), refuses a specialist's own session (its first message opens with the marker, by the
hook's own rule) and one whose repository the user excluded (``learn config --ignore-repos``,
matched against the same names as ``memory init --ignore-repos``: folder name, path,
repository key), latches the outcome the session end implies and builds the provider. The lane
is the harness's own from the lane table (``claude-code`` for a Claude Code session) when that
lane has a runner, so the specialists run on the user's own login and no API key is needed; a
harness lane without a runner keeps the inherited binding (the provider's API lane, which needs
its key).
``review`` runs the postmortem with the record's own runtime settings (its connections
ignored, as the CLI ignores them) and publishes what admission accepts.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from active_memory.agents.providers.base import ModelProvider
from active_memory.errors import (
    ActiveMemoryError,
    ProviderError,
    RunRecordError,
)
from active_memory.evidence.inventory_scan import SPECIALIST_SESSION_REASON
from active_memory.evidence.sources import open_run_source
from active_memory.harnesses import harness_row
from active_memory.history_init.identity import Probes, aliases
from active_memory.lanes import lane_row
from active_memory.learn import session_end
from active_memory.learn.folder import LessonTouched, SessionState
from active_memory.learn.worker import ReviewFailed, ReviewOutcome, ReviewSkipped
from active_memory.models.config import RuntimeConfig, parse_runtime_config
from active_memory.models.runs import Outcome, RunRecord
from active_memory.postmortem.binding import (
    BindingOverride,
    provider_for,
    resolve_source_node,
    specialist_binding,
)

__all__ = ["PostmortemReviewer", "latched_outcome", "session_lane"]

# What a session's end reason says about its outcome (Copilot CLI's reasons; Claude Code and
# Codex end a session without saying how the work went, which is taken as succeeded).
_FAILED_REASONS = frozenset({"error"})
_CANCELLED_REASONS = frozenset({"abort", "timeout"})


def latched_outcome(end_reason: str | None) -> Outcome:
    """The outcome latched for a session that ended with ``end_reason``."""
    status = (
        "failed"
        if end_reason in _FAILED_REASONS
        else "cancelled"
        if end_reason in _CANCELLED_REASONS
        else "succeeded"
    )
    said = f" ({end_reason})" if end_reason else ""
    return Outcome(
        status=status,
        latched_ms=int(time.time() * 1000),
        summary=f"latched by learning when the session ended{said}",
    )


def session_lane(harness: str) -> str | None:
    """The harness lane a session of ``harness`` is reviewed on: its own, when its CLI runs
    specialists (None: the binding as inherited)."""
    lane = harness_row(harness).lane
    row = lane_row(lane)
    return lane if row is not None and row.runner is not None else None


@dataclass(frozen=True, slots=True)
class _Prepared:
    record: RunRecord
    config: RuntimeConfig
    provider: ModelProvider
    override: BindingOverride
    scratch: Path


class PostmortemReviewer:
    """Reviews sessions into the store at ``store``; ``ignore_repos`` as ``learn config``."""

    def __init__(
        self,
        store: Path,
        *,
        ignore_repos: tuple[str, ...] = (),
        scratch: Path | None = None,
    ) -> None:
        self.store = store
        self.ignore_repos = ignore_repos
        self._scratch = scratch
        self._probes = Probes()

    def _folder(self) -> Path:
        # Private (0700): it holds a converted copy of the session's transcript.
        return Path(tempfile.mkdtemp(prefix="active-memory-learn-", dir=self._scratch))

    def prepare(self, state: SessionState) -> object:
        scratch = self._folder()
        try:
            return self._prepare(state, scratch)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    def release(self, prepared: object) -> None:
        """Erase the private copy of the session (its converted record and evidence)."""
        assert isinstance(prepared, _Prepared)
        shutil.rmtree(prepared.scratch, ignore_errors=True)

    def _prepare(self, state: SessionState, scratch: Path) -> _Prepared:
        try:
            record = open_run_source(state.session_file, scratch / "record", state.harness)
        except (RunRecordError, OSError) as error:
            raise ReviewFailed("unreadable", str(error).splitlines()[0]) from None
        if session_end.opens_with_marker(record.initial_input):
            raise ReviewSkipped("specialist_session", SPECIALIST_SESSION_REASON)
        self._check_ignored(record)
        if record.outcome is None:
            record = record.model_copy(update={"outcome": latched_outcome(state.end_reason)})
        lane = session_lane(state.harness)
        override = BindingOverride(lane=lane)
        try:
            config = parse_runtime_config(record.runtime).without_connections()
            node = resolve_source_node(record.graph, config.postmortem.source_node)
            provider = provider_for(
                specialist_binding(node, override), connection=override.connection()
            )
        except ProviderError as error:
            raise ReviewFailed(error.cause, str(error), record.run_id) from None
        except ActiveMemoryError as error:
            raise ReviewFailed("not_reviewable", str(error), record.run_id) from None
        return _Prepared(record, config, provider, override, scratch)

    def _check_ignored(self, record: RunRecord) -> None:
        if not self.ignore_repos or record.checkout is None:
            return
        workspace = str(record.checkout.path)
        probe = self._probes.probe(workspace)
        root = probe.root or Path(workspace)
        names = aliases(root, probe.key) if probe.key else (root.name, str(root))
        hit = next((value for value in self.ignore_repos if value in names), None)
        if hit is not None:
            raise ReviewSkipped("excluded_repo", f"ignored by --ignore-repos {hit!r}")

    def review(self, prepared: object) -> ReviewOutcome:
        from active_memory.postmortem.entry import run_postmortem
        from active_memory.postmortem.options import PostmortemOptions
        from active_memory.store.sqlite import SqliteStore

        assert isinstance(prepared, _Prepared)
        record = prepared.record
        with SqliteStore(self.store) as backend:
            options = PostmortemOptions(
                config=prepared.config,
                backend=backend,
                private_dir=prepared.scratch / "evidence",
                provider=prepared.provider,
                override=prepared.override,
            )
            report = asyncio.run(run_postmortem(record, options))
        lessons = tuple(
            LessonTouched(id=change.id, op=change.op, title=change.title)
            for change in report.changes
        )
        if report.ok:
            return ReviewOutcome(record.run_id, lessons)
        failed = [s for s in report.specialists if not s.ok]
        code = next((s.error_code for s in failed if s.error_code), None) or report.status
        reason = next((s.error for s in failed if s.error), None) or report.reason or code
        return ReviewOutcome(record.run_id, lessons, failure=(code, reason.splitlines()[0]))
