"""``specialist run`` end to end: a keep of a card whose file the checkout lost gets the
session's repair turn, asking to adapt or retire it; kept again, it is refused
``source:association_gone``; on a dirty checkout the same keep is deferred instead, unrepaired.

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
from cli.authoring_kit import cli, demo_runs, first_published, replay

STALE = "lesson-01JWNF15X00000000000000003"  # files docs/configuration.md, src/app/config.py


def _script_answer(
    run: Path, decide: dict[str, dict[str, Any]], repaired: dict[str, dict[str, Any]] | None = None
) -> Path:
    """A copy of ``run``'s recording whose repository maintenance answer is the recorded one
    with the decisions of ``decide`` (by id) replaced: only the last turn's response changes,
    so every request still matches the recording. With ``repaired``, one more turn follows,
    answering the repair turn with the recorded decisions and those of ``repaired``; its request
    was never recorded, so it is replayed with ``--allow-changed``."""
    lines = [json.loads(line) for line in (run / "exchanges.jsonl").read_text().splitlines()]
    [final] = [
        line for line in lines
        if line["specialist"] == "repository_maintenance" and line["response"]["answer"]
    ]  # fmt: skip
    recorded = json.loads(final["response"]["answer"])

    def answer(changed: dict[str, dict[str, Any]]) -> str:
        decisions = [changed.get(d["id"], d) for d in recorded["decisions"]]
        return json.dumps({**recorded, "decisions": decisions})

    final["response"]["answer"] = answer(decide)
    if repaired is not None:
        response = {**final["response"], "answer": answer(repaired)}
        lines.append({**final, "turn": final["turn"] + 1, "request_digest": "0" * 64,
                      "response": response})  # fmt: skip
    scripted = run.parent / "scripted.jsonl"
    scripted.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return scripted


def _retire(lesson_id: str) -> dict[str, Any]:
    return {"id": lesson_id, "action": "retire", "reason": "Its file left the checkout.",
            "references": [], "replacement": None}  # fmt: skip


def _repair_turn(recording: Path) -> str:
    """The text the host sent in the session's last turn, as a later recording keeps it."""
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    ours = [line for line in lines if line["specialist"] == "repository_maintenance"]
    last = max(ours, key=lambda line: line["turn"])["request"]["last_message"]
    return str(last.get("text") or last.get("content"))


def _keep(lesson_id: str) -> dict[str, Any]:
    return {"id": lesson_id, "action": "keep", "reason": "The advice still reads right.",
            "references": [], "replacement": None}  # fmt: skip


def _published(tmp_path: Path, name: str = "s.sqlite3") -> tuple[Path, Path]:
    second = tmp_path / "second"
    if not second.exists():
        _, second = demo_runs(tmp_path)
    store = tmp_path / name
    first_published(store)
    with SqliteStore(store) as opened:
        assert STALE in {lesson.id for lesson in opened.list_lessons()}
    return second, store


def _run(second: Path, scripted: Path, store: Path, *extra: str | Path) -> dict[str, Any]:
    result = cli("specialist", "run", "repository_maintenance", second, "--provider", "replay",
                 "--exchanges", scripted, "--store", store, "--json", *extra)  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr  # refused items, not the answer
    shown: dict[str, Any] = json.loads(result.stdout)
    return shown


def test_a_kept_gone_card_is_retired_after_the_repair_turn(tmp_path: Path) -> None:
    second, store = _published(tmp_path)
    assert not (second / "checkout" / "docs" / "configuration.md").exists()
    scripted = _script_answer(second, {STALE: _keep(STALE)}, {STALE: _retire(STALE)})
    recording = tmp_path / "repaired.jsonl"
    shown = _run(second, scripted, store, "--allow-changed", "--record", recording)
    assert shown["rejections"] == []
    assert f"{STALE} retire" in shown["admitted"]
    repair = _repair_turn(recording)
    assert repair.startswith("Your answer keeps lessons whose files are gone from the checkout:")
    assert f"- {STALE}: keep refused (source:association_gone)" in repair
    assert "adapt the card to what the checkout has now, or retire it" in repair
    assert "configuration" not in repair  # ids and codes, never card text
    # The new recording replays strictly: the repair turn is asked for exactly as recorded.
    _, again = _published(tmp_path, "again.sqlite3")
    assert f"{STALE} retire" in _run(second, recording, again)["admitted"]
    # And the postmortem of the second run, which publishes, retires the dead card.
    done = replay(second, again, "--exchanges", scripted, "--allow-changed")
    assert done.exit_code == 0, done.stdout + done.stderr
    with SqliteStore(again) as opened:
        assert STALE not in {lesson.id for lesson in opened.list_lessons()}


def test_a_keep_of_a_card_whose_file_is_gone_is_refused_through_the_cli(tmp_path: Path) -> None:
    second, store = _published(tmp_path)
    scripted = _script_answer(second, {STALE: _keep(STALE)}, {STALE: _keep(STALE)})
    shown = _run(second, scripted, store, "--allow-changed")
    # Kept again after the repair turn: refused as ever, and the other decisions judged.
    assert [(r["stage"], r["code"], r["id"]) for r in shown["rejections"]] == [
        ("source", "association_gone", STALE)
    ]
    assert STALE not in " ".join(shown["admitted"])  # neither kept nor deferred: refused
    assert shown["admitted"] == ["lesson-01JWNF15X00000000000000002 adapt"]
    text = cli("specialist", "run", "repository_maintenance", second, "--provider", "replay",
               "--exchanges", scripted, "--store", store, "--allow-changed")  # fmt: skip
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
    assert f"{STALE} defer" in shown["admitted"]  # no repair turn: the recording has none
