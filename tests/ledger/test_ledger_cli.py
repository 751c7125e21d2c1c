"""``active-memory lessons stats``: the table, one lesson's details, JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.models.runs import RunRecord
from cli.authoring_kit import isolated_build
from cli_runner import run_cli
from ledger.ledger_kit import G1, R1, R2, three_runs

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunRecord]]:
    tmp_path = tmp_path_factory.mktemp("ledger-cli")
    with isolated_build(tmp_path_factory.mktemp("isolated")):
        return tmp_path, three_runs(tmp_path)


def _stats(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    store = tmp_path / "state" / "lessons.sqlite3"
    result = run_cli(["lessons", "stats", *args, "--store", str(store), "--runs", str(tmp_path)])
    return result.exit_code, result.stdout, result.stderr


def test_the_table_lists_every_lesson_with_its_counts(
    recorded: tuple[Path, list[RunRecord]],
) -> None:
    code, out, _ = _stats(recorded[0])
    assert code == 0
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:-1]}
    assert set(rows) == {G1, R1, R2}
    assert rows[R1][1:7] == ["retired", "2", "2", "2", "2/0/0", "1/0/1/0"]
    # keep/adapt/retire/defer: the reports recorded R2 kept in the first and third runs.
    assert rows[R2][1:7] == ["r1", "3", "3", "2", "1/1/0", "2/0/0/1"]
    assert out.splitlines()[-1] == "3 lessons"


def test_one_lesson_in_json_and_text(recorded: tuple[Path, list[RunRecord]]) -> None:
    tmp_path, (a, b, c) = recorded
    code, out, _ = _stats(tmp_path, R2, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["delivered"] == 3
    assert [(d["run_id"], d["action"]) for d in data["decisions"]] == [
        (a.run_id, "keep"),
        (b.run_id, "defer"),
        (c.run_id, "keep"),
    ]
    code, out, _ = _stats(tmp_path, R2)
    assert code == 0
    assert f"defer   run {b.run_id} (was retire) [report]" in out
    assert "run outcomes    failed 1, succeeded 1" in out


def test_bad_input_is_one_sentence_and_exit_2(recorded: tuple[Path, list[RunRecord]]) -> None:
    tmp_path, _ = recorded
    code, _, err = _stats(tmp_path, "lesson-nope")
    assert code == 2
    assert "is not a lesson id" in err
    result = run_cli(["lessons", "stats", "--store", "postgresql://x/y"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    missing = run_cli(["lessons", "stats", "--runs", str(tmp_path / "absent")])
    assert missing.exit_code == 2


def test_an_unknown_id_fails_with_exit_1(recorded: tuple[Path, list[RunRecord]]) -> None:
    code, _, err = _stats(recorded[0], "lesson-01JWAZ00000000000000000009")
    assert code == 1
    assert err.startswith("error: ")
