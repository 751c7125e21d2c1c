"""The incident behind item-level refusal: one graph lesson answered with ``associations: {}``
(the contract says null), repeated after the repair turn, once cost the answer's other lessons.
Now the session ends with the answer, admission refuses that lesson alone and the rest publish.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.testing import ScriptedProvider, answer_response
from postmortem.postmortem_kit import by_labels, config_of, first_run, store_at, worker_lesson

pytestmark = pytest.mark.timeout(20)


def _answer() -> dict[str, Any]:
    lessons = [worker_lesson(f"Trace an unexpected value to its source, case {n}")
               for n in range(11)]  # fmt: skip
    lessons[6]["associations"] = {}
    return {"lessons": lessons}


async def test_one_malformed_lesson_twice_costs_only_itself(tmp_path: Path) -> None:
    _, record = first_run(tmp_path)
    provider = ScriptedProvider(
        by_labels(
            {
                ("graph_discovery", 0, 1): answer_response(_answer()),
                ("graph_discovery", 0, 2): answer_response(_answer()),  # after the repair turn
            }
        )
    )
    report = await run_postmortem(record, PostmortemOptions(
        config=config_of(repository=False), backend=store_at(tmp_path),
        private_dir=tmp_path / "evidence", provider=provider, new_id=sequential_ids(),
    ))  # fmt: skip
    discovery = report.specialist("graph_discovery")
    assert discovery.status == "published"
    assert len(report.changes) == 10
    assert dict(discovery.rejections) == {"shape": 1}  # counts by stage; the run log has codes
    with store_at(tmp_path) as store:
        titles = {lesson.title for lesson in store.list_lessons()}
    assert "Trace an unexpected value to its source, case 6" not in titles
    assert len(titles) == 10
