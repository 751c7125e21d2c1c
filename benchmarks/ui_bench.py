"""The browser's lesson list, search and lesson page at 10,000 lessons, against a store of the
demo's size.

Run: ``python benchmarks/ui_bench.py`` (``--lessons N``, ``--rounds N``).

Times what the lessons page reads (``UiData.lessons``: the page's lessons, their reach and the
counts by repository and graph) on a store of ``--lessons`` lessons, one of a tenth of that and
one of 3 (what the demo leaves), interleaved, median of ``--rounds``. Two figures:

* the list page: page 1, a repository filter on a later page, and the newest-first order;
* the search page: a word of every recommendation with a rarer word of the titles (a hundred
  matches at 10,000 lessons), a word of the titles alone, and a word nothing holds;
* the lesson page: what ``/lesson/ID`` reads (``UiData.lesson``: the lesson, its revisions and
  ledger; ``UiData.lesson_impact``: its figures in the impact report) for three lessons. The
  report is measured once per store generation and state of the runs' files, and reused by
  every later page (the first request after a change pays for the whole store).

Each is also timed through the path of a store that only lists its lessons (every lesson
decoded and filtered in Python), the path a store served over HTTPS took before the service
served pages. Where a PostgreSQL cluster can be started (``tests/pg_cluster.py``), the same
reads go through the memory service (``--store https://…``, a token of one repository holding
every lesson of its tenant): ``--lessons`` lessons against a tenant of 3, both through the
service, so the ratio is the store's size alone and not the HTTP round trips.
Goal (issue 33): each page at 10,000 lessons at most 2x the demo store's time. A page shows up
to 100 lessons where the demo store shows 3; the tenth-size store shows what does not depend
on the store's size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from active_memory.impact import ImpactStore
from active_memory.ledger.build import LedgerStore
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, Lesson, LessonDraft, RepositoryScope
from active_memory.server import RunningService, build_service
from active_memory.store.backend import ActiveMemoryBackend
from active_memory.store.postgres import PostgresStore
from active_memory.store.remote import RemoteBackend
from active_memory.store.results import HistoryEntry, Tombstone
from active_memory.store.sqlite import SqliteStore
from active_memory.ui.views import UiData

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import pg_cluster

REPOSITORIES = [f"forge:github.com/acme/service{n}" for n in range(10)]
EVIDENCE = Evidence(run_id="bench", references=("exec:e1",), reason="bench")


def fill(store: ActiveMemoryBackend, count: int, repositories: list[str] = REPOSITORIES) -> None:
    for start in range(0, count, 500):
        mutations = tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=LessonDraft(
                scope=RepositoryScope(repository=repositories[n % len(repositories)],
                                      files=(f"src/module_{n}.py",)),
                title=f"Retry the export step of module {n}",
                recommendation="Pass an explicit deadline; the default waits forever.",
                evidence=EVIDENCE))
            for n in range(start, min(count, start + 500))
        )  # fmt: skip
        store.publish(Publication(run_id="bench-fill", mutations=mutations))


class _Remote:
    """The store behind no SQL page: lessons, tombstones and histories, listed whole."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    def list_lessons(self) -> tuple[Lesson, ...]:
        return self._store.list_lessons()

    def list_retired(self) -> tuple[Tombstone, ...]:
        return self._store.list_retired()

    def history(self, lesson_id: str) -> tuple[HistoryEntry, ...]:
        return self._store.history(lesson_id)

    def histories(self) -> Iterator[HistoryEntry]:
        return self._store.histories()


class DecodedEveryLesson(UiData):
    """The page of a store that only lists: every lesson decoded, filtered and counted in
    Python."""

    @contextmanager
    def store(self) -> Iterator[LedgerStore]:
        with super().store() as opened:
            yield _Remote(opened)  # type: ignore[arg-type]


def _lesson_page(data: UiData) -> None:
    for lesson_id in LESSONS[id(data)]:
        data.lesson(lesson_id)
        data.lesson_impact(lesson_id)


def _list_page(data: UiData) -> None:
    data.lessons(repository=None, graph=None, query=None, page=1)
    data.lessons(repository=REPOSITORIES[3], graph=None, query=None, page=5)
    data.lessons(repository=None, graph=None, query=None, page=2, sort="newest")


def _search_page(data: UiData) -> None:
    data.lessons(repository=None, graph=None, query="deadline module 42", page=1)
    data.lessons(repository=None, graph=None, query="export", page=3)
    data.lessons(repository=None, graph=None, query="nowhere", page=1)


PAGES: dict[str, Callable[[UiData], None]] = {
    "list page": _list_page,
    "search page": _search_page,
    "lesson page": _lesson_page,
}
# the lessons each series' lesson page reads (by the UiData's identity): first, middle and last
LESSONS: dict[int, list[str]] = {}


def _three(ids: list[str]) -> list[str]:
    return [ids[0], ids[len(ids) // 2], ids[-1]]


def _through_service(stack: ExitStack, lessons: int) -> dict[str, UiData]:
    """The demo-sized and the big tenant of a memory service on a throwaway cluster, each read
    with a token of the repository that holds its lessons (none when no cluster can start)."""
    reason = pg_cluster.unavailable()
    if reason is not None:
        print(f"no service row: {reason}")
        return {}
    cluster = pg_cluster.Cluster()
    stack.callback(cluster.stop)
    url = cluster.create_database("ui_bench")
    service = build_service(url, pool_size=4)
    stack.callback(service.close)
    running = stack.enter_context(RunningService(service))
    series: dict[str, UiData] = {}
    for name, tenant, count in (
        ("demo-sized store, through the service", "demo", 3),
        (f"{lessons:,} lessons, through the service", "big", lessons),
    ):
        with PostgresStore(url, tenant=tenant, pool_size=1) as store:
            fill(store, count, [REPOSITORIES[3]])
            ids = _three([x.id for x in store.lesson_page(per_page=count).lessons])
            # What autovacuum does after a bulk load: without statistics the planner guesses.
            with store._writing() as session:
                session.execute("ANALYZE records")
        issued = service.credentials.create(tenant=tenant, repository=REPOSITORIES[3])
        remote = stack.enter_context(RemoteBackend(running.url, token=issued.token))
        remote_store: ImpactStore = remote
        series[name] = UiData(None, [], remote=remote_store)
        LESSONS[id(series[name])] = ids
    return series


def figures(lessons: int, rounds: int) -> dict[str, dict[str, float]]:
    """Median seconds of each page's three reads, per page, store and path."""
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        big, small = Path(scratch) / "big" / "lessons.sqlite3", Path(scratch) / "small" / "l.db"
        tenth = Path(scratch) / "tenth" / "lessons.sqlite3"
        local: dict[Path, list[str]] = {}
        for path, count in ((big, lessons), (tenth, lessons // 10), (small, 3)):
            path.parent.mkdir(mode=0o700)
            with SqliteStore(path) as store:
                fill(store, count)
                local[path] = _three([x.id for x in store.lesson_page(per_page=count).lessons])
        series: dict[str, UiData] = {
            "demo-sized store": UiData(small, []),
            f"{lessons // 10:,} lessons": UiData(tenth, []),
            f"{lessons:,} lessons": UiData(big, []),
            f"{lessons:,} lessons, every lesson decoded": DecodedEveryLesson(big, []),
            **_through_service(stack, lessons),
        }
        for data in series.values():
            if data.store_path is not None:
                LESSONS[id(data)] = local[data.store_path]
        samples = {page: {name: [] for name in series} for page in PAGES}
        for _ in range(rounds):
            for page, read in PAGES.items():
                for name, data in series.items():
                    started = time.perf_counter()
                    read(data)
                    samples[page][name].append(time.perf_counter() - started)
    return {
        page: {name: statistics.median(values) for name, values in by_store.items()}
        for page, by_store in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=10_000, help="lessons in the big store")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (median)")
    options = parser.parse_args()
    median = figures(options.lessons, options.rounds)
    for page, by_store in median.items():
        print(f"{page}: three reads, median of {options.rounds}")
        for name, value in by_store.items():
            # Through the service, the ratio is to the demo-sized tenant through the service.
            base = next(b for key, b in by_store.items() if key.startswith("demo-sized")
                        and key.endswith("service") == name.endswith("service"))  # fmt: skip
            print(f"  {name:<50} {value * 1e3:8.1f} ms   {value / base:6.2f}x")


if __name__ == "__main__":
    main()
