"""Small builders for valid lesson content (fake values only), and a directory digest."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Protocol

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, GraphScope, LessonDraft, RepositoryScope

__all__ = [
    "GRAPH_HASH",
    "REPOSITORY",
    "WEAK_RECOMMENDATION",
    "WEAK_SIGNALS",
    "make_draft",
    "make_evidence",
    "make_graph_draft",
    "tree_digest",
]

REPOSITORY = "forge:example.com/acme/app"
GRAPH_HASH = hashlib.sha256(b"example graph").hexdigest()
# A card whose only signal is weak (a random-looking seed), so the memory service holds it for
# review: it screens a held draft itself and keeps its own signals, these.
WEAK_RECOMMENDATION = "Pin the fixture seed to 7Kq9xW2mZ4vB8nR1tY6pL3sD0fG5hJa8Qe, then rerun."
WEAK_SIGNALS = ("secret:high_entropy",)


def make_evidence(run_id: str = "run-1", reason: str = "observed in the run") -> Evidence:
    return Evidence(run_id=run_id, references=("exec:e1",), reason=reason)


def make_draft(
    title: str = "Run the schema check before editing models",
    *,
    recommendation: str = "Run `make schema` after editing src/app.py; CI rejects stale schemas.",
    repository: str = REPOSITORY,
    files: tuple[str, ...] = ("src/app.py",),
    reason: str = "observed in the run",
) -> LessonDraft:
    return LessonDraft(
        scope=RepositoryScope(repository=repository, files=files),
        title=title,
        recommendation=recommendation,
        evidence=make_evidence(reason=reason),
    )


def make_graph_draft(
    title: str = "Return the verdict object, not prose",
    *,
    recommendation: str = "The verifier contract needs a JSON verdict object as the whole answer.",
    graph_hash: str = GRAPH_HASH,
    node_id: str = "verifier",
    repository: str | None = None,
) -> LessonDraft:
    return LessonDraft(
        scope=GraphScope(graph_hash=graph_hash, node_id=node_id, repository=repository),
        title=title,
        recommendation=recommendation,
        evidence=make_evidence(),
    )


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``, to prove nothing changed."""
    digest: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digest[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            digest[str(path.relative_to(root))] = "dir" if path.is_dir() else "other"
    return digest


class _Publishing(Protocol):
    def publish(self, publication: Publication, /) -> object: ...


def publish_new(backend: _Publishing, *drafts: LessonDraft, run_id: str = "run-1") -> list[str]:
    """Publish each draft as a new lesson (revision 1) in one batch; their ids, sorted, in the
    order of ``drafts``."""
    ids = sorted(new_lesson_id() for _ in drafts)
    backend.publish(
        Publication(
            run_id=run_id,
            mutations=tuple(
                Mutation(op="upsert", id=i, expected_revision=0, draft=d)
                for i, d in zip(ids, drafts, strict=True)
            ),
        )
    )
    return ids
