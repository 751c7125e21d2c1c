"""A run record, a real git checkout and answer builders shared by the admission tests.

The run: workers ``plan`` and ``build`` and the verifier ``review`` executed; ``unused`` is a
worker that never ran; ``fanout`` is a map node (structure, not an agent). One ``build``
execution is imported history and one execution belongs to an auxiliary agent outside the graph.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git

from active_memory.admission.validate import DiscoveryResult, MaintenanceResult
from active_memory.models.lessons import Evidence, GraphScope, Lesson, RepositoryScope
from active_memory.models.runs import (
    AuthoredGraph,
    Binding,
    Checkout,
    Execution,
    GraphNode,
    RunRecord,
    ToolReceipt,
)

REPO = "forge:github.com/acme/shop"
ACTOR = git.Actor("Test Author", "author@example.invalid")
IDENT_128 = "I" + "x" * 127
IDENT_129 = "I" + "x" * 128
# A node id a run record takes (65 characters) but a lesson scope refuses (130 UTF-8 bytes).
LONG_NODE = "é" * 65

_BINDING = Binding(provider="scripted", model="test-model")
GRAPH = AuthoredGraph(
    name="shop",
    nodes=(
        GraphNode(id="plan", kind="worker", binding=_BINDING),
        GraphNode(id="build", kind="worker", binding=_BINDING),
        GraphNode(id="review", kind="verifier", binding=_BINDING),
        GraphNode(id="unused", kind="worker", binding=_BINDING),
        GraphNode(id="fanout", kind="map"),
        GraphNode(id=LONG_NODE, kind="worker", binding=_BINDING),
    ),
)


def _execution(
    id: str, node: str, occurrence: int, attempt: int, status: Any, started: int, ended: int,
    *, imported: bool = False,
) -> Execution:  # fmt: skip
    return Execution(
        id=id, node_id=node, occurrence=occurrence, attempt=attempt, status=status,
        started_ms=started, ended_ms=ended, imported=imported,
    )  # fmt: skip


def _receipt(seq: int, execution: str | None, time_ms: int, tool: str,
             paths: tuple[str, ...] = ()) -> ToolReceipt:  # fmt: skip
    return ToolReceipt(seq=seq, execution=execution, time_ms=time_ms, tool=tool, paths=paths)


EXECUTIONS = (
    _execution("e-plan-1", "plan", 1, 1, "completed", 1_000, 1_500),
    _execution("e-build-1", "build", 1, 1, "error", 2_000, 2_500),
    _execution("e-build-2", "build", 1, 2, "completed", 3_000, 3_500),
    _execution("e-review-1", "review", 1, 1, "completed", 4_000, 4_500),
    _execution("e-review-early", "review", 2, 1, "completed", 500, 900),
    _execution("e-long", LONG_NODE, 1, 1, "completed", 5_000, 5_100),
    _execution("e-old", "build", 1, 1, "completed", 10, 20, imported=True),
    _execution("e-aux", "postmortem", 1, 1, "completed", 6_000, 6_100),
)
RECEIPTS = (
    _receipt(1, "e-build-1", 2_100, "Read", ("src/app/config.py",)),
    _receipt(2, "e-plan-1", 1_100, "Grep", ("src",)),
    _receipt(3, None, 2_200, "Bash"),
    _receipt(4, "e-old", 15, "Read"),
    _receipt(5, "e-aux", 6_050, "Read"),
    _receipt(6, "e-review-1", 4_100, "Read", ("src/app/config.py",)),
    _receipt(7, "e-missing", 4_200, "Read"),
)

CONFIG_PY = f"""\
CACHE_TTL_SECONDS = 30
{IDENT_128} = 1
{IDENT_129} = 2


def load_settings(path):
    return {{"path": path}}
"""


def lesson_id(n: int) -> str:
    return f"lesson-{n:026d}"


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    repo.index.commit(message, author=ACTOR, committer=ACTOR)
    return str(repo.head.commit.hexsha)


def write(root: Path, relative: str, text: str = "x\n") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def build_checkout(root: Path) -> tuple[git.Repo, str]:
    """A clean repository: a tracked tree, ignored build output, 33 files and 17 folders for
    the count limits, and a symlink to a tracked file."""
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", ACTOR.name)
        config.set_value("user", "email", ACTOR.email)
    write(root, ".gitignore", "build/\n*.log\nsecret-notes.md\n")
    write(root, "src/app/config.py", CONFIG_PY)
    write(root, "src/app/cache.py", "def evict(entry):\n    return entry\n")
    write(root, "docs/guide.md", "# Guide\n")
    for n in range(33):
        write(root, f"many/f{n:02d}.py")
    for n in range(17):
        write(root, f"dirs/d{n:02d}/keep.txt")
    write(root, "long/" + "p" * 248 + ".py")  # 256 bytes as a root-relative path
    write(root, "long/" + "p" * 249 + ".py")  # 257 bytes
    os.symlink("src/app/config.py", root / "config-link.py")
    os.symlink("build/out.py", root / "ignored-link.py")
    write(root.parent, "outside.py", "def load_settings():\n    pass\n")
    os.symlink("../outside.py", root / "outside-link.py")
    head = commit_all(repo, "initial")
    # Ignored files appear after the commit: they exist on disk but are no authority.
    write(root, "build/out.py", "def load_settings():\n    pass\n")
    write(root, "debug.log", "log\n")
    return repo, head


def make_run(root: Path, head: str | None, **changes: Any) -> RunRecord:
    run = RunRecord(
        run_id="run-1",
        graph=GRAPH,
        runtime={},
        executions=EXECUTIONS,
        checkout=Checkout(path=root, repository=REPO, commit=head),
        receipts=RECEIPTS,
    )
    return run.model_copy(update=changes)


Discover = Callable[..., DiscoveryResult]
Maintain = Callable[..., MaintenanceResult]


def only_rejection(result: DiscoveryResult | MaintenanceResult) -> tuple[str, str]:
    assert len(result.rejections) == 1, result.rejections
    rejection = result.rejections[0]
    return rejection.stage, rejection.code


def repo_lesson(n: int = 1, source_commit: str | None = None, **changes: Any) -> Lesson:
    lesson = Lesson(
        id=lesson_id(n),
        revision=3,
        scope=RepositoryScope(repository=REPO, files=("src/app/config.py",)),
        title="Reload settings after editing the config module",
        recommendation="Call load_settings again after changing src/app/config.py defaults.",
        evidence=Evidence(
            run_id="run-0",
            references=("repository:src/app/config.py",),
            reason="seen before",
            source_commit=source_commit,
        ),
    )
    return Lesson(**{**dict(lesson), **changes})


def graph_lesson(n: int = 101, node: str = "build", **changes: Any) -> Lesson:
    lesson = Lesson(
        id=lesson_id(n),
        revision=2,
        scope=GraphScope(graph_hash=GRAPH.hash, node_id=node),
        title="Run the unit tests before handing over",
        recommendation="Run pytest -q in the checkout before returning the build result.",
        evidence=Evidence(run_id="run-0", references=("graph:build",), reason="seen before"),
    )
    return Lesson(**{**dict(lesson), **changes})


def assoc(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "files": ["src/app/config.py"],
        "folders": [],
        "identifiers": ["load_settings"],
        "keyword_groups": [],
    }
    return {**base, **changes}


def repo_discovery(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": "Settings are cached per process",
        "recommendation": "After changing defaults in src/app/config.py call load_settings "
        "again; the cache keeps the old values.",
        "associations": assoc(),
        "node_id": "build",
        "references": ["exec:e-build-1", "repository:src/app/config.py"],
        "reason": "The first build attempt failed on stale settings.",
        "repository_specific": True,
    }
    return {**base, **changes}


def graph_discovery(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": "Check the error exit before retrying",
        "recommendation": "When a build attempt errors, read its last tool output before "
        "retrying with the same plan.",
        "associations": None,
        "node_id": "build",
        "references": ["exec:e-build-1", "exec:e-build-2"],
        "reason": "The retry repeated the failing step.",
        "repository_specific": False,
    }
    return {**base, **changes}


def decision(lesson: Lesson, action: str = "keep", **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": lesson.id,
        "action": action,
        "reason": "Still matches the current source.",
        "references": [],
        "replacement": None,
    }
    return {**base, **changes}


def replacement(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": "Reload settings after changing defaults",
        "recommendation": "Call load_settings again after editing defaults in "
        "src/app/config.py; cached values persist otherwise.",
        "associations": assoc(),
    }
    return {**base, **changes}


def graph_replacement(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "title": "Run the unit tests before handing over",
        "recommendation": "Run pytest -q before returning the build result; the reviewer "
        "rejects untested changes.",
        "associations": None,
    }
    return {**base, **changes}
