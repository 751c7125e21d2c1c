"""``specialist run`` end to end: a keep of a card whose file the checkout lost is refused
``source:association_gone``; on a dirty checkout the same keep is deferred instead.

The demo's two runs, real git checkouts: the first run's recorded postmortem publishes its
lessons, then repository maintenance of the second run replays the recorded session with its
final answer scripted. The second checkout no longer has ``docs/configuration.md``, the only
file of lesson 3's card besides ``src/app/config.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from active_memory.store.sqlite import SqliteStore
from cli.authoring_kit import cli, demo_runs, replay

STALE = "lesson-01JWNF15X00000000000000003"  # files docs/configuration.md, src/app/config.py


def _script_answer(run: Path, decide: dict[str, dict[str, Any]]) -> Path:
    """A copy of ``run``'s recording whose repository maintenance answer is the recorded one
    with the decisions of ``decide`` (by id) replaced: only the last turn's response changes,
    so every request still matches the recording."""
    lines = [json.loads(line) for line in (run / "exchanges.jsonl").read_text().splitlines()]
    [final] = [
        line for line in lines
        if line["specialist"] == "repository_maintenance" and line["response"]["answer"]
    ]  # fmt: skip
    answer = json.loads(final["response"]["answer"])
    answer["decisions"] = [decide.get(d["id"], d) for d in answer["decisions"]]
    final["response"]["answer"] = json.dumps(answer)
    scripted = run.parent / "scripted.jsonl"
    scripted.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return scripted


def _keep(lesson_id: str) -> dict[str, Any]:
    return {"id": lesson_id, "action": "keep", "reason": "The advice still reads right.",
            "references": [], "replacement": None}  # fmt: skip


def _published(tmp_path: Path) -> tuple[Path, Path]:
    first, second = demo_runs(tmp_path)
    store = tmp_path / "s.sqlite3"
    assert replay(first, store, "--ids", "sequential").exit_code == 0
    with SqliteStore(store) as opened:
        assert STALE in {lesson.id for lesson in opened.list_lessons()}
    return second, store


def test_a_keep_of_a_card_whose_file_is_gone_is_refused_through_the_cli(tmp_path: Path) -> None:
    second, store = _published(tmp_path)
    assert not (second / "checkout" / "docs" / "configuration.md").exists()
    scripted = _script_answer(second, {STALE: _keep(STALE)})
    result = cli("specialist", "run", "repository_maintenance", second, "--provider", "replay",
                 "--exchanges", scripted, "--store", store, "--json")  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr  # refused items, not the answer
    shown = json.loads(result.stdout)
    assert [(r["stage"], r["code"], r["id"]) for r in shown["rejections"]] == [
        ("source", "association_gone", STALE)
    ]
    assert STALE not in " ".join(shown["admitted"])  # neither kept nor deferred: refused
    text = cli("specialist", "run", "repository_maintenance", second, "--provider", "replay",
               "--exchanges", scripted, "--store", store)  # fmt: skip
    assert "association_gone" in text.stdout
    assert f"item 1 {STALE}" in text.stdout


def test_on_a_dirty_checkout_the_same_keep_is_deferred_not_refused(tmp_path: Path) -> None:
    second, store = _published(tmp_path)
    (second / "checkout" / "scratch.txt").write_text("uncommitted\n")  # dirty: cannot supersede
    scripted = _script_answer(second, {STALE: _keep(STALE)})
    result = cli("specialist", "run", "repository_maintenance", second, "--provider", "replay",
                 "--exchanges", scripted, "--store", store, "--allow-changed",
                 "--json")  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    shown = json.loads(result.stdout)
    assert shown["rejections"] == []
    assert f"{STALE} defer" in shown["admitted"]
