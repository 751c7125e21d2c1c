"""What lessons learned from a run would reach in the runs that followed."""

from __future__ import annotations

from active_memory.impact.learned import learned_reach
from impact.impact_kit import Ex, draft, make_run

T0 = 1_750_000_000_000


def test_a_draft_on_the_failing_files_reaches_the_later_failure_first() -> None:
    later = [
        make_run("run-1", T0, [Ex("e1", status="error", calls=(("src/a.py",), ("src/z.py",)))]),
        make_run("run-2", T0 + 1, [Ex("e2", calls=(("src/a.py",),))]),
    ]
    reach = learned_reach([draft(["src/a.py"]), draft(["src/never.py"], title="Elsewhere")], later)
    assert (reach.lessons, reach.runs, reach.failures, reached := reach.reached) == (2, 2, 1, 1)
    assert reach.cell == f"{reached}/1"


def test_a_draft_cut_by_the_budget_does_not_reach_it() -> None:
    later = [make_run("run-1", T0, [Ex("e1", status="error", calls=(("src/a.py",),))],
                      hookInjectionTokens=1)]  # fmt: skip
    assert learned_reach([draft(["src/a.py"])], later).cell == "0/1"


def test_no_later_runs_reach_nothing() -> None:
    assert learned_reach([draft(["src/a.py"])], []).cell == "0/0"
