"""``specialist eval`` over the demo runs: a row per run, and a diff against baselines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from active_memory.agents.prompts import load_prompt
from active_memory.postmortem.specialist_eval import EvalRow, compare_rows
from cli.authoring_kit import cli, demo_runs
from folder_copies import shipped_copy

EVAL = ("specialist", "eval", "repository_discovery")
# Eval gives every run the same store, but the second demo run's discovery was recorded after
# the first run had published its lessons (which discovery is shown): replay it leniently.
LENIENT = "--allow-changed"


def _baselines(tmp_path: Path, *runs: Path) -> Path:
    folder = tmp_path / "baseline"
    folder.mkdir()
    for run in runs:
        shutil.copy(run / "exchanges.jsonl", folder / f"{run.name}.jsonl")
    return folder


def test_one_row_per_run_with_admitted_items_and_rejection_codes(tmp_path: Path) -> None:
    first, second = demo_runs(tmp_path)
    result = cli(*EVAL, first, second, "--provider", "replay", "--store", tmp_path / "s",
                 "--json", LENIENT)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    runs = json.loads(result.stdout)["runs"]
    assert [(r["run"], r["status"], len(r["admitted"])) for r in runs] == [
        ("first", "accepted", 2), ("second", "accepted", 0),
    ]  # fmt: skip
    assert runs[0]["rejections"] == {
        "card:source_position": 1, "secret:url_credentials": 1, "source:cited_file_missing": 1,
    }  # fmt: skip
    assert runs[0]["input_tokens"] > 0


def test_an_unchanged_replay_shows_no_change_against_its_baseline(tmp_path: Path) -> None:
    first, second = demo_runs(tmp_path)
    baseline = _baselines(tmp_path, first, second)
    result = cli(*EVAL, first, second, "--provider", "replay", "--store", tmp_path / "s",
                 "--baseline", baseline, LENIENT)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-3:] == ["against the baseline", "first: no change",
                                              "second: no change"]  # fmt: skip


def test_a_strict_replay_after_a_prompt_edit_fails_the_row_naming_the_prompt(
    tmp_path: Path,
) -> None:
    first, _ = demo_runs(tmp_path)
    prompts = shipped_copy("prompts", tmp_path)
    text = load_prompt("repository_discovery") + "\nPrefer fewer, sharper lessons.\n"
    (prompts / "repository_discovery.md").write_text(text)
    result = cli(*EVAL, first, "--provider", "replay", "--store", tmp_path / "s",
                 "--prompts", prompts)  # fmt: skip
    assert result.exit_code == 1
    assert "prompt changed; first differing part system" in result.stdout


def test_a_missing_baseline_is_bad_input(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)
    empty = tmp_path / "none"
    empty.mkdir()
    result = cli(*EVAL, first, "--provider", "replay", "--baseline", empty)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: --baseline {str(empty)!r} has no first.jsonl")


def test_eval_records_each_run_to_its_own_file(tmp_path: Path) -> None:
    first, second = demo_runs(tmp_path)
    out = tmp_path / "recorded"
    result = cli(*EVAL, first, second, "--provider", "replay", "--store", tmp_path / "s",
                 "--record", out, LENIENT)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["first.jsonl", "second.jsonl"]


def test_the_diff_lists_items_each_side_has_alone_and_both_rejection_counts() -> None:
    from collections import Counter

    before = EvalRow("r", "accepted", ("a", "b", "b"), Counter({"card:x": 1}))
    after = EvalRow("r", "accepted", ("b", "c"), Counter({"card:x": 1, "secret:y": 2}))
    diff = compare_rows(before, after)
    assert (diff.added, diff.removed) == (("c",), ("a", "b"))
    assert diff.changed
    assert not compare_rows(before, before).changed


def test_a_failed_run_is_reported_as_a_failure_against_its_baseline_not_as_no_change(
    tmp_path: Path,
) -> None:
    first, second = demo_runs(tmp_path)
    baseline = _baselines(tmp_path, first, second)
    prompts = shipped_copy("prompts", tmp_path)
    text = load_prompt("repository_discovery") + "\nPrefer fewer, sharper lessons.\n"
    (prompts / "repository_discovery.md").write_text(text)
    # Strict: the edited prompt fails both runs; the second run's baseline admits nothing, so
    # its admitted items and rejections are the same on both sides.
    result = cli(*EVAL, first, second, "--provider", "replay", "--store", tmp_path / "s",
                 "--baseline", baseline, "--prompts", prompts, "--json")  # fmt: skip
    assert result.exit_code == 1
    diffs = {d["run"]: d for d in json.loads(result.stdout)["diffs"]}
    assert (diffs["second"]["status_before"], diffs["second"]["status_after"]) == (
        "accepted", "failed"
    )  # fmt: skip
    assert diffs["second"]["changed"]
    text_result = cli(*EVAL, second, "--provider", "replay", "--store", tmp_path / "s2",
                      "--baseline", baseline, "--prompts", prompts)  # fmt: skip
    assert text_result.exit_code == 1
    assert "second: no change" not in text_result.stdout
    assert text_result.stdout.splitlines()[-1] == (
        "second: not compared, the run ended failed (its error is above)"
    )


def test_a_failed_baseline_replay_is_a_failure_not_no_change(tmp_path: Path) -> None:
    _, second = demo_runs(tmp_path)
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    # A recording of the other specialists only: the baseline's replay has nothing to answer
    # graph_discovery with, while the run itself admits nothing either.
    lines = (second / "exchanges.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["specialist"] != "graph_discovery"]
    (baseline / "second.jsonl").write_text("\n".join(kept) + "\n")
    other = ("specialist", "eval", "graph_discovery")
    result = cli(*other, second, "--provider", "replay", "--store", tmp_path / "s",
                 "--baseline", baseline, LENIENT)  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "second: no change" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith(
        "second: not compared, the baseline ended failed: unexpected call: specialist "
        "'graph_discovery'"
    )


def test_a_baseline_recorded_with_a_model_replays_without_a_model_changed_warning(
    tmp_path: Path,
) -> None:
    first, _ = demo_runs(tmp_path)
    recorded = tmp_path / "baseline"
    model = ("--provider", "replay", "--model", "claude-opus-4-1", "--store", tmp_path / "s",
             LENIENT)  # fmt: skip
    made = cli(*EVAL, first, *model, "--record", recorded)
    assert made.exit_code == 0, made.output
    assert json.loads((recorded / "first.jsonl").read_text().splitlines()[0])["model"] == (
        "claude-opus-4-1"
    )
    again = cli(*EVAL, first, *model, "--baseline", recorded)
    assert again.exit_code == 0, again.output
    # The run's own recording was made with the inherited model, so its replay with --model warns;
    # the baseline, recorded with the same --model, must not.
    assert "first/exchanges.jsonl': model changed" in again.stderr
    assert str(recorded / "first.jsonl") not in again.stderr


def test_a_diff_with_a_failed_side_is_a_changed_failure_even_with_the_same_items() -> None:
    before = EvalRow("r", "accepted", ())
    after = EvalRow("r", "failed", (), error="the provider timed out")
    diff = compare_rows(before, after)
    assert diff.failed
    assert diff.changed
    assert diff.to_dict()["status_after"] == "failed"
    assert diff.to_dict()["error_after"] == "the provider timed out"
    assert compare_rows(after, after).failed
    assert not compare_rows(before, before).failed


def test_reach_counts_later_failures_the_admitted_lessons_would_reach_first(
    tmp_path: Path,
) -> None:
    first, second = demo_runs(tmp_path)
    again = tmp_path / "again"
    shutil.copytree(first, again)  # the same failures once more, after the lessons existed
    result = cli(*EVAL, first, second, again, "--provider", "replay", "--store", tmp_path / "s",
                 "--json", LENIENT)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    reach = {r["run"]: r["reach"] for r in json.loads(result.stdout)["runs"]}
    assert reach["again"] == {"lessons": 2, "runs": 0, "failures": 0, "reached": 0}
    assert reach["first"]["runs"] == 2
    assert reach["first"]["failures"] > 0
    assert reach["first"]["reached"] == reach["first"]["failures"]
    table = cli(*EVAL, first, second, "--provider", "replay", "--store", tmp_path / "s",
                LENIENT).stdout.splitlines()  # fmt: skip
    assert table[0].split()[3] == "reach"
    assert table[1].split()[3] == "0/0"  # the second run failed nowhere
