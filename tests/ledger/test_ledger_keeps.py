"""Exact keeps: the postmortem records the ids each specialist kept (a run log
``postmortem_specialist`` event's ``keep_ids``, a report specialist's ``keep_ids``) and the
ledger reads them (tests/ledger/test_ledger_runs.py); logs and reports of older postmortems,
without them, still get the inference, tested here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from active_memory.ledger import LessonLedger, ledgers, load_sources
from cli.authoring_kit import isolated_build
from ledger.ledger_kit import G1, R1, R2, three_runs
from postmortem.postmortem_kit import store_at

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """The three runs as an older postmortem wrote them (no keep_ids, no dry_run in the run
    logs and reports): the first and third run ids."""
    tmp_path = tmp_path_factory.mktemp("keeps")
    with isolated_build(tmp_path_factory.mktemp("isolated")):
        a, _, c = three_runs(tmp_path)
    _as_older_postmortems(tmp_path)
    return tmp_path, a.run_id, c.run_id


def _as_older_postmortems(folder: Path) -> None:
    logs = list(folder.rglob("run-log.jsonl"))
    reports = list(folder.rglob("report.json"))
    assert logs
    assert reports
    for log in logs:
        events = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
        assert any("keep_ids" in event for event in events)  # what the postmortem writes now
        for event in events:
            event.pop("keep_ids", None)
            event.pop("dry_run", None)
        log.write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    for report_file in reports:
        report = json.loads(report_file.read_text("utf-8"))
        for specialist in report["specialists"]:
            specialist.pop("keep_ids", None)
        report_file.write_text(json.dumps(report), "utf-8")


def _copy(recorded: tuple[Path, str, str], tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    shutil.copytree(recorded[0], folder)
    return folder


def _rewrite_log(folder: Path, keep_ids: dict[str, list[str]]) -> None:
    """Hand-edit the first run's log: its ``postmortem_specialist`` events get ``keep_ids`` by
    role, with ``kept`` set to match (what a postmortem recording keeps would write)."""
    log = folder / "first" / "run-log.jsonl"
    lines = []
    for line in log.read_text("utf-8").splitlines():
        event = json.loads(line)
        if event.get("event") == "postmortem_specialist" and event.get("role") in keep_ids:
            event["keep_ids"] = keep_ids[event["role"]]
            event["kept"] = len(keep_ids[event["role"]])
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n", "utf-8")


def _all(folder: Path) -> dict[str, LessonLedger]:
    sources = load_sources([folder])
    assert sources.skipped == ()
    with store_at(folder) as store:
        found = ledgers(store, sources, retired=[t.id for t in store.list_retired()])
    return {ledger.id: ledger for ledger in found}


def _keeps(ledger: LessonLedger) -> list[tuple[str, str, str | None]]:
    return [(d.run_id, d.source, d.role) for d in ledger.decisions if d.action == "keep"]


def test_without_keep_ids_keeps_are_inferred_from_deliveries(
    recorded: tuple[Path, str, str],
) -> None:
    folder, a, _ = recorded
    found = _all(folder)
    assert _keeps(found[G1]) == [(a, "inferred", "graph_maintenance")]
    # The first run kept R2 too, but did not deliver it: the inference cannot see that keep.
    assert a not in {run_id for run_id, _, _ in _keeps(found[R2])}


def test_keep_ids_in_the_run_log_are_read_exactly(
    recorded: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, a, c = recorded
    folder = _copy(recorded, tmp_path)
    _rewrite_log(folder, {"repository_maintenance": [R1, R2], "graph_maintenance": []})
    found = _all(folder)
    assert _keeps(found[R1]) == [(a, "run_log", "repository_maintenance")]
    # R2's keep in the first run, invisible to the inference, is now on its ledger.
    assert (a, "run_log", "repository_maintenance") in _keeps(found[R2])
    assert found[R2].decision_counts["keep"] == 2
    # The graph specialist recorded that it kept nothing: G1, though delivered, was not kept.
    assert _keeps(found[G1]) == []
    # The third run's log has no keep_ids: its keep of R2 is still inferred.
    assert (c, "inferred", "repository_maintenance") in _keeps(found[R2])


def test_a_capped_log_list_falls_back_to_inference(
    recorded: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, a, _ = recorded
    folder = _copy(recorded, tmp_path)
    _rewrite_log(folder, {"graph_maintenance": []})
    log = folder / "first" / "run-log.jsonl"
    events = [json.loads(line) for line in log.read_text("utf-8").splitlines()]
    for event in events:
        if event.get("role") == "graph_maintenance" and event.get("event") == (
            "postmortem_specialist"
        ):
            event["kept"] = 1  # one keep counted, none listed: the list is not whole
    log.write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    assert _keeps(_all(folder)[G1]) == [(a, "inferred", "graph_maintenance")]


def test_keep_ids_in_the_report_win_over_the_log(
    recorded: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, a, _ = recorded
    folder = _copy(recorded, tmp_path)
    _rewrite_log(folder, {"repository_maintenance": [R1]})
    report_file = folder / "first" / "report.json"
    report = json.loads(report_file.read_text("utf-8"))
    for specialist in report["specialists"]:
        if specialist["specialist"] == "repository_maintenance":
            specialist["keep_ids"] = [R1, R2]
    report_file.write_text(json.dumps(report), "utf-8")
    found = _all(folder)
    assert _keeps(found[R1]) == [(a, "report", "repository_maintenance")]
    assert (a, "report", "repository_maintenance") in _keeps(found[R2])
