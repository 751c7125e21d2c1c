"""Lessons, a workspace and an in-memory backend for recall and hook tests.

Imported as ``recall.kit`` (``tests/`` is on ``sys.path`` through the root conftest).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from active_memory.errors import PublicationError
from active_memory.models.changes import Publication
from active_memory.models.lessons import Evidence, GraphScope, Lesson, RepositoryScope
from active_memory.recall.signals import WorkspaceRoot
from active_memory.store.backend import (
    PublicationControl,
    PublicationReceipt,
    Snapshot,
    SnapshotRequest,
)

REPOSITORY = "forge:github.com/acme/widgets"
WORKSPACE = "/home/dev/widgets"
ROOT = WorkspaceRoot.at(WORKSPACE)
GRAPH = "a" * 64
EVIDENCE = Evidence(run_id="run-1", references=("exec:e1",), reason="seen in run-1")
FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"


def lesson_id(number: int) -> str:
    return f"lesson-{number:026d}"


def lesson(
    number: int,
    *,
    files: Sequence[str] = (),
    folders: Sequence[str] = (),
    identifiers: Sequence[str] = (),
    keyword_groups: Sequence[Sequence[str]] = (),
    title: str | None = None,
    recommendation: str | None = None,
    revision: int = 1,
    repository: str = REPOSITORY,
) -> Lesson:
    scope = RepositoryScope(
        repository=repository,
        files=tuple(files),
        folders=tuple(folders),
        identifiers=tuple(identifiers),
        keyword_groups=tuple(tuple(group) for group in keyword_groups),
    )
    return Lesson(
        id=lesson_id(number),
        revision=revision,
        scope=scope,
        title=title or f"Card {number}",
        recommendation=recommendation or f"Recommendation {number}.",
        evidence=EVIDENCE,
    )


def graph_lesson(
    number: int,
    node_id: str,
    *,
    graph_hash: str = GRAPH,
    repository: str | None = None,
    revision: int = 1,
) -> Lesson:
    return Lesson(
        id=lesson_id(number),
        revision=revision,
        scope=GraphScope(graph_hash=graph_hash, node_id=node_id, repository=repository),
        title=f"Node card {number}",
        recommendation=f"Node recommendation {number}.",
        evidence=EVIDENCE,
    )


def widgets_lessons() -> tuple[Lesson, ...]:
    """The lesson set the hook fixtures (tests/fixtures/hooks) are written against."""
    return (
        lesson(1, files=["src/widgets/config.py"], title="Config loads lazily"),
        lesson(2, folders=["src/widgets/storage"], title="Storage writes are batched"),
        lesson(3, identifiers=["configure_bedrock"], title="configure_bedrock needs a region"),
        lesson(4, keyword_groups=[["bedrock", "region"]], title="Bedrock region comes from env"),
        lesson(5, folders=["tests"], title="Tests need the fake clock"),
        lesson(6, files=["docs/index.md"], title="Docs are generated"),
    )


class FakeBackend:
    """Scopes a fixed lesson list like a real backend; counts snapshot calls."""

    def __init__(self, lessons: Iterable[Lesson], generation: int = 1) -> None:
        self.lessons = tuple(sorted(lessons, key=lambda item: item.id))
        self._generation = generation
        self.requests: list[SnapshotRequest] = []

    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        self.requests.append(request)
        identity = request.identity
        kept = []
        for item in self.lessons:
            scope = item.scope
            if scope.kind == "repository":
                if request.repository and scope.repository == identity.repository:
                    kept.append(item)
            elif (
                request.graph
                and scope.graph_hash == identity.graph_hash
                and scope.repository in (None, identity.repository)
            ):
                kept.append(item)
        return Snapshot(self._generation, tuple(kept))

    def publish(
        self, publication: Publication, control: PublicationControl | None = None
    ) -> PublicationReceipt:
        raise PublicationError("the fake backend is read-only")

    def generation(self) -> int:
        return self._generation


def seed_store(path: Path, lessons: Iterable[Lesson]) -> None:
    """Create a real SQLite store at ``path`` holding ``lessons`` (each at revision 1)."""
    from active_memory.models.changes import Mutation
    from active_memory.store.sqlite import SqliteStore

    with SqliteStore(path) as store:
        mutations = tuple(
            Mutation(op="upsert", id=item.id, expected_revision=0, draft=item.draft)
            for item in lessons
        )
        store.publish(Publication(run_id="seed", mutations=mutations))


def widgets_checkout(path: Path) -> Path:
    """A git checkout whose origin makes its repository key :data:`REPOSITORY`."""
    import git

    path.mkdir(parents=True, exist_ok=True)
    git.Repo.init(path).create_remote("origin", "https://github.com/acme/widgets.git")
    return path


def payload_in(name: str, workspace: Path) -> bytes:
    """A fixture payload moved from :data:`WORKSPACE` to a real ``workspace`` directory."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return text.replace(WORKSPACE, str(workspace)).encode("utf-8")
