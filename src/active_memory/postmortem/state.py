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
from dataclasses import KW_ONLY, dataclass, field

from active_memory.agents.specialists import Meter, ProgressCallback, Validated
from active_memory.models.runs import Binding, GraphNode, RunRecord
from active_memory.postmortem.failures import Failure
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import Prepared
from active_memory.postmortem.publication_plan import IdBook
from active_memory.postmortem.report import LessonChange, QuarantineNote
from active_memory.store.backend import PublicationControl

__all__ = ["ReviewState"]

_log = logging.getLogger(__name__)


@dataclass(eq=False, repr=False)
class ReviewState:
    """The shared deadline starts when the state is made; complete results may still publish
    for ``options.settlement_ms`` after it."""

    record: RunRecord
    names: tuple[str, ...]
    options: PostmortemOptions
    _: KW_ONLY
    node: GraphNode
    binding: Binding
    started: float = field(default_factory=time.monotonic, init=False)
    deadline: float = field(init=False)
    control: PublicationControl = field(init=False)
    ids: IdBook = field(init=False)
    progress: ProgressCallback | None = field(init=False)
    meters: dict[str, Meter] = field(init=False)
    results: dict[str, Validated] = field(default_factory=dict, init=False)
    failures: dict[str, Failure] = field(default_factory=dict, init=False)
    # Specialists not started because they cannot succeed on this run, with the reason.
    skipped: dict[str, str] = field(default_factory=dict, init=False)
    # The (id, revision) pairs each maintenance specialist last saw: a conflict compares them.
    reviewed: dict[str, frozenset[tuple[str, int]]] = field(default_factory=dict, init=False)
    prepared: Prepared | None = field(default=None, init=False)
    changes: list[LessonChange] = field(default_factory=list, init=False)
    quarantined: list[QuarantineNote] = field(default_factory=list, init=False)
    published: set[str] = field(default_factory=set, init=False)
    checkout_changed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.deadline = self.started + self.options.config.postmortem.timeout_ms / 1000
        # Every draft it publishes passed admission's screens: the store need not repeat them.
        self.control = PublicationControl(
            deadline=self.deadline + self.options.settlement_ms / 1000, screened_by="admission"
        )
        self.ids = IdBook(self.options.new_id)
        self.progress = self.options.on_progress
        self.meters = {name: Meter(name) for name in self.names}

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
