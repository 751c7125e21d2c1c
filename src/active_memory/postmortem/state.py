"""One postmortem in progress: its deadline, its publication control, and what each specialist
has come to (a meter always; a validated result or a failure once it settles).

The phases (:mod:`.preparation`, :mod:`.scheduling`, :mod:`.publication`,
:mod:`.report_assembly`) read and settle this state; none of them raises for an ordinary
failure: each one becomes the status and one-line error of the specialist it hit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from active_memory.agents.specialists import Meter, Validated
from active_memory.models.runs import Binding, GraphNode, RunRecord
from active_memory.postmortem.failures import Failure
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import Prepared
from active_memory.postmortem.publication_plan import IdBook
from active_memory.postmortem.report import LessonChange, QuarantineNote
from active_memory.store.backend import PublicationControl

__all__ = ["ReviewState"]

_log = logging.getLogger(__name__)


class ReviewState:
    """The shared deadline starts when the state is made; complete results may still publish
    for ``options.settlement_ms`` after it."""

    def __init__(
        self,
        record: RunRecord,
        names: tuple[str, ...],
        options: PostmortemOptions,
        *,
        node: GraphNode,
        binding: Binding,
    ) -> None:
        self.record = record
        self.names = names
        self.options = options
        self.node = node
        self.binding = binding
        self.started = time.monotonic()
        self.deadline = self.started + options.config.postmortem.timeout_ms / 1000
        # Every draft it publishes passed admission's screens: the store need not repeat them.
        self.control = PublicationControl(
            deadline=self.deadline + options.settlement_ms / 1000, screened_by="admission"
        )
        self.ids = IdBook(options.new_id)
        self.progress = options.on_progress
        self.meters = {name: Meter(name) for name in names}
        self.results: dict[str, Validated] = {}
        self.failures: dict[str, Failure] = {}
        # Specialists not started because they cannot succeed on this run, with the reason.
        self.skipped: dict[str, str] = {}
        # The (id, revision) pairs each maintenance specialist last saw: a conflict compares them.
        self.reviewed: dict[str, frozenset[tuple[str, int]]] = {}
        self.prepared: Prepared | None = None
        self.changes: list[LessonChange] = []
        self.quarantined: list[QuarantineNote] = []
        self.published: set[str] = set()
        self.checkout_changed = False

    @property
    def cancelled(self) -> bool:
        cancel = self.options.cancel
        return cancel is not None and cancel.cancelled

    def note(self, name: str, state: str) -> None:
        """Tell the host's progress callback, once it has failed never again."""
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

    def skip(self, name: str, reason: str) -> None:
        self.skipped[name] = reason
        self.note(name, "skipped")

    def fail_all(self, names: Iterable[str], failure: Failure) -> None:
        for name in list(names):
            self.fail(name, failure)

    def pending(self) -> dict[str, Validated]:
        """Validated results with something to publish."""
        return {name: result for name, result in self.results.items() if result.changes}
