"""The demo: shipped bundles are the fixture runs, replayed offline end to end."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import git
import pytest

from active_memory.demo import (
    DEMO_REMOTE,
    bundle_folder,
    load_bundle,
    materialize_run,
    run_demo,
)
from fixture_runs import RUNS

REGENERATE = (
    "src/active_memory/demo/*.bundle.json must hold the fixture runs' files: rebuild them with "
    "active_memory.demo.bundle_folder(tests/fixtures/runs/<name>)"
)


def test_the_first_demo_run_is_the_retry_and_review_fixture() -> None:
    assert load_bundle("first") == bundle_folder(RUNS / "retry-and-review"), REGENERATE


def test_the_second_demo_run_is_clean_success_with_a_manifest_of_the_first_runs_lessons() -> None:
    shipped = load_bundle("second")
    fixture = bundle_folder(RUNS / "clean-success")
    assert {k: v for k, v in shipped.items() if k != "run.json"} == {
        k: v for k, v in fixture.items() if k != "run.json"
    }
    ours, theirs = json.loads(shipped["run.json"]), json.loads(fixture["run.json"])
    assert {k: v for k, v in ours.items() if k != "deliveries"} == {
        k: v for k, v in theirs.items() if k != "deliveries"
    }
    assert {d["lesson_id"] for d in ours["deliveries"]} == {
        "lesson-01JWNF15X00000000000000002", "lesson-01JWNF15X00000000000000003"
    }  # fmt: skip


def test_a_later_run_is_a_child_commit_of_the_earlier_checkout(tmp_path: Path) -> None:
    first, first_commit = materialize_run(load_bundle("first"), tmp_path / "a")
    second, second_commit = materialize_run(
        load_bundle("second"), tmp_path / "b", parent=first / "checkout"
    )
    repo = git.Repo(second / "checkout")
    assert [p.hexsha for p in repo.head.commit.parents] == [first_commit]
    assert repo.remotes.origin.url == DEMO_REMOTE
    assert json.loads((second / "run.json").read_text())["checkout"]["commit"] == second_commit
    assert not (second / "checkout" / "docs").exists()  # removed by the later commit


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"the demo tried to connect to {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_network")
async def test_the_demo_replays_both_postmortems_and_recalls_the_adapted_lesson(
    tmp_path: Path,
) -> None:
    result = await run_demo(tmp_path / "demo")
    first, second = result.steps
    assert (first.report.status, second.report.status) == ("completed", "completed")
    assert len(first.lessons) == 3
    assert len(second.lessons) == 2
    assert dict(first.report.rejections) == {
        "card": 1, "injection": 1, "references": 1, "secret": 1, "source": 1
    }  # fmt: skip
    assert [c.op for c in second.report.changes] == ["adapt", "retire"]
    assert "[lesson-01JWNF15X00000000000000002@2]" in result.recall_text
    assert result.recall_report.delivered == ("lesson-01JWNF15X00000000000000002@2",)
    assert result.store.exists()
