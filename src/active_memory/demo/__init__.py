"""The demo: two recorded runs, replayed postmortems, the lessons they publish, and recall.

Two small runs of a fictional order service ship as package data (one JSON bundle per run:
``run.json``, transcripts, the checkout's files and the recorded provider ``exchanges.jsonl``):

* ``first``: implement fails twice on a ``FEATURE_FLAGS`` variable leaking from the harness
  environment, succeeds on attempt 3, then review asks for documentation;
* ``second``: a later, clean run on a later commit of the same repository (feature flags and
  their documentation are gone, a request timeout was added).

:func:`run_demo` unpacks both into a folder, makes each checkout a real git repository (the
second commit a child of the first, so provenance allows adapting and retiring), runs both
postmortems with the replay provider into a fresh store and shows what a tool call on a lesson's
file would receive. No key, no network: every model answer comes from the recordings.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import git

from active_memory.agents.providers.replay import CHECKOUT, ReplayProvider
from active_memory.agents.specialists import ProgressCallback
from active_memory.models.config import parse_runtime_config
from active_memory.models.lessons import Lesson
from active_memory.models.runs import RUN_FILE, load_run_record
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.report import PostmortemReport
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import Caller, RecallReport, RecallSession
from active_memory.recall.signals import ToolCall, WorkspaceRoot
from active_memory.runlog import RunLog
from active_memory.store.backend import RunIdentity, SnapshotRequest
from active_memory.store.sqlite import SqliteStore

__all__ = [
    "DEMO_REMOTE",
    "DEMO_RUNS",
    "DemoResult",
    "DemoStep",
    "bundle_folder",
    "load_bundle",
    "materialize_run",
    "run_demo",
]

DEMO_RUNS = ("first", "second")
DEMO_REMOTE = "https://github.com/example/order-service.git"
RECALL_FILE = "tests/conftest.py"
EXCHANGES = "exchanges.jsonl"
# Fixed identity and dates make the demo's commits, and so its printed output, reproducible.
_ACTOR = git.Actor("Demo", "demo@example.invalid")
_DATES = {"first": "1748772000 +0000", "second": "1749376800 +0000"}


def bundle_folder(folder: str | os.PathLike[str]) -> dict[str, str]:
    """Every file under ``folder`` (relative POSIX path -> text), sorted: a bundle's content."""
    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    return {p.relative_to(root).as_posix(): p.read_text("utf-8") for p in files}


def load_bundle(name: str) -> dict[str, str]:
    """The shipped bundle of demo run ``name`` (``first`` or ``second``)."""
    if name not in DEMO_RUNS:
        raise KeyError(f"no demo run {name!r}; the runs are {', '.join(DEMO_RUNS)}")
    text = resources.files(__package__).joinpath(f"{name}.bundle.json").read_text("utf-8")
    files: dict[str, str] = json.loads(text)
    return files


def _write_files(files: Mapping[str, str], destination: Path) -> None:
    for relative, text in files.items():
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")


def _commit(repo: git.Repo, message: str, date: str | None) -> str:
    repo.git.add(A=True)
    commit = repo.index.commit(
        message, author=_ACTOR, committer=_ACTOR, author_date=date, commit_date=date
    )
    return str(commit.hexsha)


def materialize_run(
    source: str | os.PathLike[str] | Mapping[str, str],
    destination: str | os.PathLike[str],
    *,
    parent: str | os.PathLike[str] | None = None,
    remote: str | None = DEMO_REMOTE,
    date: str | None = None,
) -> tuple[Path, str]:
    """Write a recorded run (a folder or a bundle) to ``destination`` with a real git checkout.

    Without ``parent`` the checkout becomes a new repository with one commit; with ``parent``
    (an earlier checkout) it is a clone of it plus one commit holding this run's files, so the
    earlier commit is an ancestor. ``remote`` becomes ``origin`` (never fetched), which gives
    the checkout its repository key. The commit is written into ``run.json``; returns
    ``(record folder, commit)``.
    """
    files = source if isinstance(source, Mapping) else bundle_folder(source)
    folder = Path(destination)
    folder.mkdir(parents=True, exist_ok=True)
    checkout = folder / "checkout"
    if parent is None:
        _write_files(files, folder)
        repo = git.Repo.init(checkout)
    else:
        repo = git.Repo.clone_from(os.fspath(parent), checkout)
        for entry in checkout.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        _write_files(files, folder)
    if remote is not None:
        if "origin" in [r.name for r in repo.remotes]:
            repo.remotes.origin.set_url(remote)
        else:
            repo.create_remote("origin", remote)
    commit = _commit(repo, "recorded checkout", date)
    run_file = folder / RUN_FILE
    data = json.loads(run_file.read_text("utf-8"))
    data["checkout"]["commit"] = commit
    run_file.write_text(json.dumps(data, indent=2) + "\n", "utf-8")
    return folder, commit


@dataclass(frozen=True, slots=True)
class DemoStep:
    """One replayed postmortem: the run folder, its report and the live lessons afterwards."""

    name: str
    folder: Path
    commit: str
    report: PostmortemReport
    lessons: tuple[Lesson, ...]


@dataclass(frozen=True, slots=True)
class DemoResult:
    directory: Path
    store: Path
    steps: tuple[DemoStep, ...]
    recall_file: str
    recall_text: str
    recall_report: RecallReport

    @property
    def checkout(self) -> Path:
        return self.steps[-1].folder / "checkout"


def _recall(store: SqliteStore, checkout: Path, repository: str) -> tuple[str, RecallReport]:
    identity = RunIdentity("demo-recall", repository=repository)
    snapshot = store.snapshot(SnapshotRequest(identity, repository=True, graph=False))
    record = load_run_record(checkout.parent)
    config = parse_runtime_config(record.runtime).active_memory
    session = RecallSession(
        RecallIndex(snapshot.lessons, repository=repository), WorkspaceRoot.at(checkout), config
    )
    call = ToolCall("Read", {"file_path": RECALL_FILE}, str(checkout))
    result = session.recall(call, Caller("implement", "demo-conversation"))
    result.release()
    return result.text, result.report


async def run_demo(
    directory: str | os.PathLike[str], *, on_progress: ProgressCallback | None = None
) -> DemoResult:
    """Unpack both demo runs under ``directory``, replay their postmortems into
    ``directory/lessons.sqlite3`` and recall a Read of ``tests/conftest.py`` afterwards.

    A relative ``directory`` is made absolute first: the recalled tool call's ``cwd`` is the
    checkout, and recall reads a relative ``cwd`` from the workspace root (as a harness's), not
    from this process's working directory, so a relative checkout would match nothing."""
    root = Path(os.path.abspath(directory))
    root.mkdir(parents=True, exist_ok=True)
    store_path = root / "lessons.sqlite3"
    new_id = sequential_ids()
    steps: list[DemoStep] = []
    parent: Path | None = None
    with SqliteStore(store_path) as store:
        for name in DEMO_RUNS:
            folder, commit = materialize_run(
                load_bundle(name), root / name, parent=parent, date=_DATES[name]
            )
            parent = folder / "checkout"
            record = load_run_record(folder)
            config = parse_runtime_config(record.runtime).without_connections()
            # Strict: a recording older than the prompts, contracts or evidence fails loudly.
            where = {str(record.checkout.path): CHECKOUT} if record.checkout is not None else {}
            provider = ReplayProvider(folder / EXCHANGES, strict=True, locations=where)
            options = PostmortemOptions(
                config=config,
                backend=store,
                private_dir=root / ".state" / name / "evidence",
                provider=provider,
                run_log=RunLog(root / ".state" / name / "run-log.jsonl"),
                new_id=new_id,
                on_progress=on_progress,
            )
            report = await run_postmortem(record, options)
            provider.assert_consumed()
            steps.append(DemoStep(name, folder, commit, report, store.list_lessons()))
        assert parent is not None
        checkout = record.checkout
        repository = checkout.repository if checkout is not None else ""
        text, recall_report = _recall(store, parent, repository)
    return DemoResult(root, store_path, tuple(steps), RECALL_FILE, text, recall_report)
