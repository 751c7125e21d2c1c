"""A selected run's record as memory init reviews it: its checkout as proven now.

The record of a session names its workspace with a path key; memory init reviews and publishes
under the namespace the checkout proves today (:mod:`.identity`), so the record's checkout is
replaced by that checkout, its identity and its current commit. Discovery reviews a run against
its own checkout; maintenance against the newest selected checkout of the repository.
"""

from __future__ import annotations

from pathlib import Path

from active_memory.history_init.state import RepositoryEntry, RunEntry, SessionState, TaskEntry
from active_memory.models.config import RuntimeConfig, parse_runtime_config
from active_memory.models.runs import Checkout, RunRecord, load_run_record

__all__ = ["review_config", "review_record", "task_record"]


def review_record(run: RunEntry, repository: RepositoryEntry) -> RunRecord:
    record = load_run_record(run.record_dir)
    checkout = Checkout(
        path=Path(repository.checkout), repository=repository.repository, commit=repository.head
    )
    return record.model_copy(update={"checkout": checkout})


def task_record(state: SessionState, task: TaskEntry) -> RunRecord:
    """The record ``task`` reviews: a discovery task's run against the run's own checkout, a
    maintenance task's against its repository's newest one."""
    run = state.run(task.run)
    repository = state.repository(task.repository)
    if task.kind == "discovery":
        repository = repository.model_copy(update={"checkout": run.checkout})
    return review_record(run, repository)


def review_config(record: RunRecord) -> RuntimeConfig:
    """The record's own runtime sections, without connections (a record never chooses where
    traffic goes), as for a postmortem of the record."""
    return parse_runtime_config(record.runtime).without_connections()
