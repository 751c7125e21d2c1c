"""Impact over generated histories: delivered before every recurrence versus after it, never
delivered, before it existed, budget cuts, and what a replay with today's store would do."""

from __future__ import annotations

from collections.abc import Iterator

from active_memory.impact import LessonImpact, measure_impact
from active_memory.store.results import HistoryEntry
from impact.impact_kit import Ex, HistoryStore, lesson_id, make_run

T0 = 1_750_000_000_000
LEARNED = "2025-06-15T15:06:40.000Z"  # after run-0 (T0), before run-1


def _by_id(report_lessons: tuple[LessonImpact, ...]) -> dict[str, LessonImpact]:
    return {lesson.id: lesson for lesson in report_lessons}


def _history() -> tuple[HistoryStore, str, str, str]:
    store = HistoryStore()
    early = store.publish(1, ["src/a.py"], "run-0", LEARNED)
    late = store.publish(2, ["src/b.py"], "run-0", LEARNED, title="Mind b before editing it")
    idle = store.publish(3, ["src/never.py"], "run-0", LEARNED, title="A file nobody opens")
    return store, early, late, idle


def _runs(early: str, late: str) -> list:  # type: ignore[type-arg]
    failing = Ex("e0", status="error", calls=(("src/a.py",), ("src/b.py",)))
    runs = [make_run("run-0", T0, [failing])]
    for n in (1, 2):
        runs.append(
            make_run(
                f"run-{n}",
                T0 + n * 3_600_000,
                [
                    # early rides on the first call; the execution fails after three calls
                    Ex(
                        f"e{n}a",
                        status="error",
                        conversation="c",
                        calls=(("src/a.py",), ("src/b.py",), ("src/x.py",)),
                        delivered=((early, 1, 0),),
                    ),
                    # late reaches the same conversation only in the next execution
                    Ex(
                        f"e{n}b",
                        conversation="c",
                        calls=(("src/b.py",),),
                        delivered=((late, 1, 0),),
                    ),
                ],
            )
        )
    return runs


def test_a_lesson_delivered_before_every_recurrence_is_told_from_one_delivered_after() -> None:
    store, early, late, _ = _history()
    report = measure_impact(store, _runs(early, late))
    lessons = _by_id(report.lessons)
    recurring = [f for f in lessons[early].failures if f.existed]
    assert [(f.run_id, f.delivered, f.tool_calls_before) for f in recurring] == [
        ("run-1", True, 3),
        ("run-2", True, 3),
    ]
    assert lessons[early].delivered_before_failures == 2
    after = [f for f in lessons[late].failures if f.existed]
    assert [(f.run_id, f.delivered, f.missed) for f in after] == [
        ("run-1", False, "after_the_failure"),
        ("run-2", False, "after_the_failure"),
    ]
    # replaying the calls, recall would have handed "late" over on the failing call itself
    assert all(f.would_then and f.would_today for f in after)
    assert lessons[late].delivered_before_failures == 0


def test_failures_before_the_lesson_existed_are_its_baseline() -> None:
    store, early, late, _ = _history()
    lesson = _by_id(measure_impact(store, _runs(early, late)).lessons)[early]
    first = lesson.failures[0]
    assert (first.run_id, first.existed, first.learned_here, first.missed) == (
        "run-0", False, True, "before_it_existed"
    )  # fmt: skip
    assert not first.would_then
    assert first.would_today
    assert (lesson.before.runs, lesson.before.failed) == (1, 1)
    assert (lesson.delivered.runs, lesson.delivered.failed) == (2, 2)
    assert [run.run_id for run in lesson.runs] == ["run-0", "run-1", "run-2"]
    assert [run.before_failure for run in lesson.runs] == [0, 1, 1]


def test_a_lesson_never_delivered_is_listed_as_such() -> None:
    store, early, late, idle = _history()
    report = measure_impact(store, _runs(early, late))
    lesson = _by_id(report.lessons)[idle]
    assert lesson.never_delivered
    assert (lesson.runs_since, lesson.deliveries, lesson.failures) == (2, 0, ())
    assert not _by_id(report.lessons)[early].never_delivered
    assert report.totals.never_delivered == 1


def test_a_lesson_delivered_often_without_a_later_failure_is_quiet() -> None:
    store = HistoryStore()
    calm = store.publish(1, ["src/calm.py"], "run-0", LEARNED)
    runs = [make_run("run-0", T0, [Ex("e0", calls=(("src/other.py",),))])]
    for n in (1, 2, 3):
        runs.append(
            make_run(f"run-{n}", T0 + n * 3_600_000,
                     [Ex(f"e{n}", calls=(("src/calm.py",),), delivered=((calm, 1, 0),))])
        )  # fmt: skip
    assert _by_id(measure_impact(store, runs, often=3).lessons)[calm].quiet
    assert not _by_id(measure_impact(store, runs, often=4).lessons)[calm].quiet


def test_a_card_the_budget_left_out_is_a_budget_cut() -> None:
    store = HistoryStore()
    first = store.publish(1, ["src/a.py"], "run-0", LEARNED)
    second = store.publish(2, ["src/a.py"], "run-0", LEARNED, title="Second card on a")
    runs = [
        make_run("run-0", T0, [Ex("e0", calls=(("src/z.py",),))]),
        # a budget of about one card: recall ranks by id, so only the first fits
        make_run("run-1", T0 + 3_600_000,
                 [Ex("e1", status="error", calls=(("src/a.py",),), delivered=((first, 1, 0),))],
                 hookInjectionTokens=70),
    ]  # fmt: skip
    lessons = _by_id(measure_impact(store, runs).lessons)
    assert lessons[first].failures[0].delivered
    cut = lessons[second].failures[0]
    assert (cut.delivered, cut.missed, cut.would_then) == (False, "budget_cut", False)


def test_a_retired_lesson_is_not_delivered_by_todays_store() -> None:
    store = HistoryStore()
    gone = store.publish(1, ["src/a.py"], "run-0", LEARNED)
    store.retire(gone, "admin", "2025-06-20T00:00:00.000Z")
    runs = [
        make_run("run-0", T0, [Ex("e0", calls=(("src/z.py",),))]),
        make_run("run-1", T0 + 3_600_000, [Ex("e1", status="timeout", calls=(("src/a.py",),))]),
    ]
    report = measure_impact(store, runs, retired=[gone])
    failure = _by_id(report.lessons)[gone].failures[0]
    assert (failure.existed, failure.delivered, failure.missed) == (True, False, "not_delivered")
    assert failure.would_then
    assert not failure.would_today
    assert not _by_id(report.lessons)[gone].live


def test_a_graph_lesson_is_on_the_failures_of_its_node_in_its_graph() -> None:
    from active_memory.models.lessons import Evidence, GraphScope, LessonDraft
    from impact.impact_kit import GRAPH

    def graph_draft(repository: str | None) -> LessonDraft:
        return LessonDraft(
            scope=GraphScope(graph_hash=GRAPH.hash, node_id="implement", repository=repository),
            title="Check the environment first",
            recommendation="List the environment before searching the filesystem.",
            evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen"),
        )

    store = HistoryStore()
    plain = "lesson-01JWAG00000000000000000001"
    qualified = "lesson-01JWAG00000000000000000002"
    for ident, repository in ((plain, None), (qualified, "forge:github.com/example/other")):
        store.entries[ident] = [
            HistoryEntry(id=ident, revision=1, op="upsert", generation=1, run_id="run-0",
                         time=LEARNED, draft=graph_draft(repository))
        ]  # fmt: skip
    runs = [
        make_run("run-0", T0, [Ex("e0", calls=(("src/z.py",),))]),
        make_run("run-1", T0 + 3_600_000, [Ex("e1", status="crashed", calls=(("src/z.py",),)),
                                           Ex("e2", node="review", completion="REJECT: no")]),
    ]  # fmt: skip
    lessons = _by_id(measure_impact(store, runs).lessons)
    (failure,) = lessons[plain].failures
    assert (failure.execution, failure.existed, failure.delivered) == ("e1", True, False)
    # the replay hands it over in the execution's prompt, before its first call
    assert failure.would_then
    assert failure.would_today
    assert lessons[qualified].failures == ()  # qualified by a repository this run is not in


def test_a_card_in_a_later_attempts_prompt_did_not_reach_the_earlier_failures() -> None:
    from active_memory.models.runs import Delivery

    store, early, _, _ = _history()
    attempts = [
        Ex("a1", status="error", conversation="c", calls=(("src/a.py",),) * 5),
        Ex("a2", status="error", conversation="c", calls=(("src/a.py",),) * 5),
        Ex("a3", conversation="c", calls=(("src/a.py",),) * 3),
    ]
    record = make_run("run-1", T0 + 3_600_000, attempts)
    started = {e.id: e.started_ms for e in record.executions}

    def prompted(execution: str) -> list:  # type: ignore[type-arg]
        prompt = Delivery(lesson_id=early, revision=1, node_id="implement",
                          conversation_id="c", channel="prompt", execution=execution,
                          time_ms=started[execution])  # fmt: skip
        runs = [make_run("run-0", T0, []), record.model_copy(update={"deliveries": (prompt,)})]
        lesson = _by_id(measure_impact(store, runs).lessons)[early]
        return [(f.execution, f.delivered, f.tool_calls_before, f.missed) for f in lesson.failures]

    assert prompted("a3") == [
        ("a1", False, None, "after_the_failure"),
        ("a2", False, None, "after_the_failure"),
    ]
    # in the second attempt's prompt: before its five calls and its failure, after the first's
    assert prompted("a2") == [("a1", False, None, "after_the_failure"), ("a2", True, 5, None)]


def test_an_imported_store_counts_the_runs_its_recorded_deliveries_prove() -> None:
    store = HistoryStore()
    imported = "2026-01-01T00:00:00.000Z"  # after both runs: the import starts the history
    kept = store.publish(1, ["src/a.py"], "import", imported)
    store.entries[kept][0] = store.entries[kept][0].model_copy(update={"revision": 2})
    gone = lesson_id(2)
    store.entries[gone] = [
        HistoryEntry(id=gone, revision=2, op="retire", generation=1, run_id="import",
                     time=imported, draft=None)
    ]  # fmt: skip
    runs = [
        make_run("run-0", T0, [Ex("e0", status="error", calls=(("src/a.py",),))]),
        make_run("run-1", T0 + 3_600_000,
                 [Ex("e1", calls=(("src/a.py",),), delivered=((kept, 1, 0), (gone, 1, 0)))]),
    ]  # fmt: skip
    lessons = _by_id(measure_impact(store, runs, retired=[gone]).lessons)
    assert sorted(lessons) == [kept, gone]
    figures = {
        ident: (x.live, x.deliveries, x.runs_since, x.delivered.runs, x.never_delivered)
        for ident, x in lessons.items()
    }
    # run-1's delivery of revision 1 proves each existed there
    assert figures == {kept: (True, 1, 1, 1, False), gone: (False, 1, 1, 1, False)}
    assert [(r.run_id, r.revision, r.deliveries) for r in lessons[gone].runs] == [("run-1", 1, 1)]
    assert (lessons[gone].revision, lessons[gone].title) == (2, None)


class _OneReadStore(HistoryStore):
    """A store that counts its history reads: every lesson's at once, never one by one."""

    reads: int = 0

    def history(self, ident: str) -> tuple[HistoryEntry, ...]:
        raise AssertionError(f"the impact read {ident}'s history alone")

    def histories(self) -> Iterator[HistoryEntry]:
        self.reads += 1
        return super().histories()


def test_the_histories_are_read_once_for_every_lesson() -> None:
    store = _OneReadStore()
    early = store.publish(1, ["src/a.py"], "run-0", LEARNED)
    late = store.publish(2, ["src/b.py"], "run-0", LEARNED, title="Mind b before editing it")
    gone = store.publish(3, ["src/c.py"], "run-0", LEARNED, title="Retired card")
    store.retire(gone, "run-1", LEARNED)
    report = measure_impact(store, _runs(early, late), retired=[gone])
    assert store.reads == 1
    assert [lesson.id for lesson in report.lessons] == sorted([early, late, gone])
    assert not _by_id(report.lessons)[gone].live
