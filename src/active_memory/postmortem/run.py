"""One postmortem in progress: preparation, the concurrent review, publication, the report.

:func:`~active_memory.postmortem.entry.run_postmortem` checks the preconditions and hands over
to :class:`PostmortemRun`, which owns the shared deadline, the publication control and every
specialist's :class:`~active_memory.agents.specialists.Meter`. Nothing here raises for an
ordinary failure: each one becomes the status and one-line error of the specialist it hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from active_memory.admission.validate import AdmissionContext
from active_memory.agents.prompts import SPECIALISTS
from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.providers.registry import close_provider, create_provider
from active_memory.agents.specialists import (
    SPECS,
    Meter,
    ProgressCallback,
    SpecialistEnv,
    Validated,
    run_specialist,
)
from active_memory.agents.tool_loop import SessionLimits
from active_memory.cancel import CancelToken
from active_memory.errors import (
    EvidenceError,
    ProvenanceError,
    PublicationFenced,
    RevisionConflict,
    StoreError,
)
from active_memory.evidence.private import prepare_private_dir
from active_memory.models.changes import Rejection
from active_memory.models.config import RuntimeConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import Binding, GraphNode, RunRecord
from active_memory.postmortem.changes import lesson_changes, visible_set
from active_memory.postmortem.failures import Failure, classify, one_line, unexpected
from active_memory.postmortem.inspection import Inspection, checkout_status, host_facts, inspect
from active_memory.postmortem.publish import IdBook, Plan, dispatch, plan_publication
from active_memory.postmortem.report import (
    CheckoutStatus,
    LessonChange,
    PostmortemReport,
    SpecialistStatus,
)
from active_memory.postmortem.summary import overall_status, specialist_report
from active_memory.provenance import verify_fingerprint
from active_memory.store.backend import (
    ActiveMemoryBackend,
    PublicationControl,
    RunIdentity,
    Snapshot,
    SnapshotRequest,
)

__all__ = ["MAX_CONFLICT_ROUNDS", "PostmortemRun", "ProviderFactory", "Unprepared"]

ProviderFactory = Callable[[Binding], ModelProvider]
MAX_CONFLICT_ROUNDS = 3
_log = logging.getLogger(__name__)


class Unprepared(Exception):
    """Preparation failed for every specialist at once (snapshot, provider). Internal: the
    postmortem reports it; a trial turns it into a PostmortemError."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class PostmortemRun:
    def __init__(
        self,
        record: RunRecord,
        names: tuple[str, ...],
        *,
        node: GraphNode,
        binding: Binding | None = None,
        config: RuntimeConfig,
        backend: ActiveMemoryBackend,
        private_dir: Path,
        provider: ModelProvider | None,
        provider_factory: ProviderFactory | None,
        cancel: CancelToken | None,
        new_id: Callable[[], str],
        evidence_budget: int,
        dry_run: bool,
        frozen_lessons: Sequence[Lesson] | None,
        settlement_s: float,
        limits: SessionLimits,
        on_progress: ProgressCallback | None,
    ) -> None:
        chosen = binding or node.binding
        assert chosen is not None
        self.record = record
        self.names = names
        self.node = node
        self.binding: Binding = chosen
        self.config = config
        self.backend = backend
        self.private_dir = private_dir
        self._given_provider = provider
        self._factory = provider_factory
        self._owned_provider: ModelProvider | None = None
        self.cancel = cancel
        self.ids = IdBook(new_id)
        self.budget = evidence_budget
        self.dry_run = dry_run
        self.frozen = frozen_lessons
        self.limits = limits
        self.progress = on_progress
        self.started = time.monotonic()
        self.deadline = self.started + config.postmortem.timeout_ms / 1000
        self.control = PublicationControl(deadline=self.deadline + settlement_s)
        self.meters = {name: Meter(name) for name in names}
        self.results: dict[str, Validated] = {}
        self.failures: dict[str, Failure] = {}
        self.changes: list[LessonChange] = []
        self.revisions: dict[str, int] = {}
        self.snapshot: Snapshot | None = None
        self.env: SpecialistEnv | None = None
        self.fingerprint: str | None = None
        self.checkout: CheckoutStatus | None = None
        self.checkout_changed = False
        self.published: set[str] = set()

    # -- helpers -----------------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.cancelled

    def note(self, name: str, state: str) -> None:
        if self.progress is None:
            return
        try:
            self.progress(name, state)
        except Exception as error:
            # Progress is a courtesy to the host; its failure must not stop the review.
            _log.warning("postmortem progress callback failed, no longer called: %s", error)
            self.progress = None

    def fail(self, name: str, failure: Failure) -> None:
        self.results.pop(name, None)
        self.failures[name] = failure
        self.meters[name].ended = self.meters[name].ended or time.monotonic()
        self.note(name, failure.status)

    async def _in_thread(self, function: Callable[..., object], *args: object) -> object:
        remaining = max(0.0, self.deadline - time.monotonic())
        async with asyncio.timeout(remaining):
            return await asyncio.to_thread(function, *args)

    # -- preparation -------------------------------------------------------------------------

    def _identity(self) -> RunIdentity:
        checkout = self.record.checkout
        return RunIdentity(
            self.record.run_id,
            repository=checkout.repository if checkout is not None else None,
            graph_hash=self.record.graph_hash,
        )

    def _request(self) -> SnapshotRequest:
        memory = self.config.active_memory
        return SnapshotRequest(self._identity(), repository=memory.repository, graph=memory.graph)

    def _provider(self) -> ModelProvider:
        if self._given_provider is not None:
            return self._given_provider
        try:
            if self._factory is not None:
                self._owned_provider = self._factory(self.binding)
            else:
                self._owned_provider = create_provider(self.binding)
        except Exception as error:
            # A factory is host code: whatever it raises is this postmortem's provider failure.
            failure = unexpected("provider_error", "the provider could not be created", error)
            raise Unprepared(failure) from None
        return self._owned_provider

    async def prepare(self) -> None:
        snapshot = await self._prepared(
            "store_error", "the store snapshot failed", self.backend.snapshot, self._request()
        )
        inspected = await self._prepared(
            "internal_error", "inspecting the checkout failed", inspect, self.record
        )
        assert isinstance(snapshot, Snapshot)
        assert isinstance(inspected, Inspection)
        try:
            prepare_private_dir(self.private_dir)
        except EvidenceError as error:
            raise Unprepared(Failure("failed", "evidence_error", one_line(str(error)))) from None
        except OSError as error:
            failure = unexpected("evidence_error", "the private evidence folder failed", error)
            raise Unprepared(failure) from None
        self.snapshot = snapshot
        self.fingerprint = inspected.fingerprint
        self.checkout = checkout_status(self.record, inspected)
        admission = AdmissionContext(
            run=self.record,
            config=self.config.active_memory,
            checkout=inspected.state,
            verifier=inspected.verifier,
        )
        checkout = self.record.checkout
        self.env = SpecialistEnv(
            record=self.record,
            binding=self.binding,
            provider=self._provider(),
            admission=admission,
            private_dir=self.private_dir,
            checkout_root=checkout.path if checkout is not None else None,
            host_facts=host_facts(self.record, inspected.state),
            evidence_budget=self.budget,
            deadline=self.deadline,
            cancel=self.cancel,
            limits=self.limits,
            progress=self.progress,
        )

    async def _prepared(
        self, code: str, what: str, function: Callable[..., object], *args: object
    ) -> object:
        """One preparation step in a thread under the deadline; any failure is Unprepared."""
        try:
            return await self._in_thread(function, *args)
        except TimeoutError:
            failure = Failure("timed_out", "timed_out", "the deadline passed while preparing")
            raise Unprepared(failure) from None
        except StoreError as error:
            raise Unprepared(Failure("failed", "store_error", one_line(str(error)))) from None
        except Exception as error:
            raise Unprepared(unexpected(code, what, error)) from None

    def inputs(self, name: str, snapshot: Snapshot) -> tuple[list[Lesson], list[dict[str, object]]]:
        spec = SPECS[name]
        if not spec.maintenance:
            return [], []
        lessons = [lesson for lesson in snapshot.lessons if lesson.scope.kind == spec.scope]
        changes = lesson_changes(snapshot.lessons, self.record.deliveries, self.frozen)
        return lessons, list(changes[spec.scope])

    # -- the review --------------------------------------------------------------------------

    async def _wait(self, tasks: Iterable[asyncio.Task[Validated]]) -> None:
        """Until every task is done, the deadline passes or the host cancels."""
        pending = set(tasks)
        waiter = asyncio.ensure_future(self.cancel.wait()) if self.cancel is not None else None
        try:
            while pending and not self.cancelled:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    return
                watch: set[asyncio.Future[Any]] = set(pending)
                if waiter is not None:
                    watch.add(waiter)
                await asyncio.wait(watch, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                pending = {task for task in pending if not task.done()}
        finally:
            if waiter is not None:
                waiter.cancel()

    async def _timed(
        self, name: str, lessons: list[Lesson], changes: list[dict[str, object]]
    ) -> Validated:
        env = self.env
        assert env is not None
        meter = self.meters[name]
        if meter.conflict_retries == 0:
            meter.started = time.monotonic()
        meter.ended = None
        try:
            return await run_specialist(env, name, meter, lessons=lessons, changes=changes)
        finally:
            meter.ended = time.monotonic()

    async def _run_specialists(self, names: Sequence[str], snapshot: Snapshot) -> None:
        """Run ``names`` concurrently under the shared deadline; settle each into a result or a
        failure. Unfinished specialists are cancelled: nothing of theirs publishes."""
        env = self.env
        assert env is not None
        tasks: dict[str, asyncio.Task[Validated]] = {}
        for name in names:
            lessons, changes = self.inputs(name, snapshot)
            self.note(name, "running")
            tasks[name] = asyncio.create_task(
                self._timed(name, lessons, changes), name=f"postmortem:{name}"
            )
        try:
            await self._wait(tasks.values())
        finally:
            for task in tasks.values():
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)
        for name, task in tasks.items():
            if task.cancelled():
                self.fail(name, classify(asyncio.CancelledError(), cancelled=self.cancelled))
                continue
            error = task.exception()
            if error is not None:
                self.fail(name, classify(error, cancelled=self.cancelled))
                continue
            result = task.result()
            self.results[name] = result
            self.note(name, f"validated, {result.changes} change(s)" if result.changes else
                      "nothing to do")  # fmt: skip

    # -- publication -------------------------------------------------------------------------

    def _pending(self) -> dict[str, Validated]:
        return {name: result for name, result in self.results.items() if result.changes}

    def _fence_all(self, pending: Iterable[str], failure: Failure) -> None:
        for name in pending:
            self.fail(name, failure)

    async def _checkout_unchanged(self) -> bool:
        checkout = self.record.checkout
        if self.fingerprint is None or checkout is None:
            return True
        try:
            await asyncio.to_thread(verify_fingerprint, checkout.path, self.fingerprint)
        except ProvenanceError:
            return False
        return True

    async def _gate(self, pending: dict[str, Validated]) -> bool:
        """Whether publication may go ahead: not cancelled, in time, checkout unchanged."""
        if self.cancelled:
            self.control.cancel()
        refusal = self.control.refusal()
        if refusal is not None:
            status: SpecialistStatus = "cancelled" if self.cancelled else "timed_out"
            self._fence_all(
                pending,
                Failure(
                    status, status, f"publication fenced ({refusal}); nothing of it was published"
                ),
            )
            return False
        if not await self._checkout_unchanged():
            self.checkout_changed = True
            message = (
                "the checkout changed during review (its fingerprint differs); "
                "publication refused, keep it unchanged until the postmortem publishes"
            )
            self._fence_all(pending, Failure("failed", "checkout_changed", message))
            return False
        return True

    async def publish(self) -> None:
        rounds = 0
        while True:
            pending = self._pending()
            if not pending or not await self._gate(pending):
                return
            try:
                plan = plan_publication(self.record.run_id, pending, self.ids)
            except Exception as error:
                # The id source is host code; a broken one must not take the host's run down.
                failure = unexpected("internal_error", "assigning lesson ids failed", error)
                self._fence_all(pending, failure)
                return
            if self.dry_run:
                self.changes = list(plan.changes)
                return
            try:
                receipt = await dispatch(self.backend, plan.publication, self.control)
            except RevisionConflict as conflict:
                rounds += 1
                await self._resolve(conflict, plan, rounds)
                continue
            except PublicationFenced as error:
                status: SpecialistStatus = "cancelled" if self.cancelled else "timed_out"
                self._fence_all(pending, Failure(status, status, one_line(str(error))))
                return
            except StoreError as error:
                self._fence_all(pending, Failure("failed", "store_error", one_line(str(error))))
                return
            except Exception as error:
                # A backend outside the library's error tree (a raw sqlite3 or OS error): whether
                # it wrote is unknown to us, so nothing is reported as published.
                self._fence_all(pending, unexpected("store_error", "publishing failed", error))
                return
            self.revisions = dict(receipt.revisions)
            self.changes = [
                c.model_copy(update={"revision": receipt.revisions.get(c.id)}) for c in plan.changes
            ]
            self.published.update(pending)
            for name in pending:
                self.note(name, "published")
            return

    async def _resolve(self, conflict: RevisionConflict, plan: Plan, rounds: int) -> None:
        """After a conflict: fresh ids for refused new lessons, fresh maintenance for the rest.

        A conflict no planned mutation owns, or one more round than MAX_CONFLICT_ROUNDS, fails
        every pending specialist: retrying the same plan could only conflict again until the
        deadline, hammering the store."""
        owners = sorted({plan.owners[m.id] for m in conflict.mismatches if m.id in plan.owners})
        if not owners or rounds > MAX_CONFLICT_ROUNDS:
            why = (
                f"still conflicting after {MAX_CONFLICT_ROUNDS} retries"
                if owners
                else "the store refused ids this publication does not hold"
            )
            failure = Failure("conflict", "conflict", one_line(f"{conflict} ({why})"))
            self._fence_all(self._pending(), failure)
            return
        maintenance: list[str] = []
        for name in owners:
            if SPECS[name].maintenance:
                maintenance.append(name)
            else:
                for mismatch in conflict.mismatches:
                    self.ids.forget(mismatch.id)
        if not maintenance:
            return
        if time.monotonic() >= self.deadline:
            message = "revision conflict and no time left before the deadline to decide again"
            for name in maintenance:
                self.fail(name, Failure("conflict", "conflict", message))
            return
        try:
            snapshot = await self._in_thread(self.backend.snapshot, self._request())
        except Exception as error:
            for name in maintenance:
                self.fail(
                    name,
                    Failure(
                        "conflict",
                        "conflict",
                        one_line(
                            f"revision conflict, and the snapshot could not be refreshed: {error}"
                        ),
                    ),
                )
            return
        assert isinstance(snapshot, Snapshot)
        again: list[str] = []
        for name in maintenance:
            scope = SPECS[name].scope
            if visible_set(snapshot.lessons, scope) == self.results[name].reviewed:
                # A conflict the visible lessons do not explain (a hidden tombstone, a store that
                # lags): retrying would loop, so stop here.
                message = f"{one_line(str(conflict))} The visible {scope} lessons did not change"
                self.fail(name, Failure("conflict", "conflict", one_line(message)))
            else:
                self.results.pop(name)
                self.meters[name].conflict_retries += 1
                again.append(name)
        if again:
            await self._run_specialists(again, snapshot)

    # -- the whole run -----------------------------------------------------------------------

    async def _watch_cancel(self) -> None:
        if self.cancel is not None:
            await self.cancel.wait()
            self.control.cancel()

    async def run(self, prompts: dict[str, str], contracts: dict[str, str]) -> PostmortemReport:
        watcher = asyncio.ensure_future(self._watch_cancel())
        try:
            try:
                await self.prepare()
            except Unprepared as unprepared:
                for name in self.names:
                    self.fail(name, unprepared.failure)
            else:
                assert self.snapshot is not None
                await self._run_specialists(self.names, self.snapshot)
                await self.publish()
        except Exception as error:
            # A bug must not take the host's run down: whatever had not settled is reported
            # failed. Host cancellation (a BaseException) still propagates after the drain.
            self._settle_unexpected(error)
        finally:
            watcher.cancel()
            if self._owned_provider is not None:
                with contextlib.suppress(Exception):
                    await close_provider(self._owned_provider)
        return await self._report(prompts, contracts)

    def _settle_unexpected(self, error: Exception) -> None:
        failure = unexpected("internal_error", "the postmortem stopped", error)
        for name in self.names:
            result = self.results.get(name)
            settled = result is not None and not result.changes
            if name not in self.failures and name not in self.published and not settled:
                self.fail(name, failure)

    # -- the report --------------------------------------------------------------------------

    async def _report(self, prompts: dict[str, str], contracts: dict[str, str]) -> PostmortemReport:
        reports = tuple(
            specialist_report(
                name,
                self.meters.get(name),
                self.results.get(name),
                self.failures.get(name),
                dry_run=self.dry_run,
            )
            for name in SPECIALISTS
        )
        status = overall_status(
            reports,
            cancelled=self.cancelled,
            checkout_changed=self.checkout_changed,
            dry_run=self.dry_run,
        )
        reason = None
        if status not in ("completed", "dry_run"):
            reason = next((r.error for r in reports if r.error), None)
        after: int | None = None
        try:
            after = await asyncio.wait_for(asyncio.to_thread(self.backend.generation), 5)
        except Exception as error:
            # The report matters more than this figure: a store that cannot say is "unknown".
            _log.warning("the store generation after the postmortem is unknown: %s", error)
            after = None
        return PostmortemReport(
            run_id=self.record.run_id,
            status=status,
            specialists=reports,
            changes=tuple(self.changes),
            reason=reason,
            source_node=self.node.id,
            provider=self.binding.provider,
            model=self.binding.model,
            generation_before=self.snapshot.generation if self.snapshot is not None else None,
            generation_after=after,
            prompt_sha256=prompts,
            contract_sha256=contracts,
            elapsed_ms=int((time.monotonic() - self.started) * 1000),
            dry_run=self.dry_run,
            checkout=self.checkout,
        )

    @property
    def rejections(self) -> tuple[Rejection, ...]:
        return tuple(
            r for name in SPECIALISTS if name in self.meters for r in self.meters[name].rejections
        )
