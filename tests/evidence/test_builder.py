from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from active_memory.errors import EvidenceCancelled, EvidenceError
from active_memory.evidence.builder import SPECIALISTS, build_evidence
from active_memory.evidence.pager import CancelToken, PageLimits
from active_memory.models.runs import load_run_record, parse_run_record
from fixture_runs import RUN_NAMES, RUNS

FAKE_SECRETS = (
    "sk-ant-api03-EXAMPLEONLY-not-a-real-key-000000000000",
    "ghp_EXAMPLEONLYnotarealtoken000000000000",
    "AKIAEXAMPLEONLY00000",
)

GRAPH_LESSON = {
    "id": "lesson-01JWKR2B7D5F3H1K9M8N6P4Q2S",
    "revision": 1,
    "title": "Name new settings with the APP_ prefix",
    "recommendation": "Read new settings from APP_* variables; the fixture isolates only those.",
    "scope": {"kind": "graph", "graph_hash": "0" * 64, "node_id": "implement", "repository": None},
}
REPOSITORY_LESSON = {
    **GRAPH_LESSON,
    "id": "lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B",
    "revision": 2,
    "scope": {"kind": "repository", "repository": "forge:github.com/example/x"},
}


def _build(name: str, specialist: str, tmp_path: Path, **options: Any) -> Any:
    return build_evidence(
        load_run_record(RUNS / name), specialist, private_dir=tmp_path / "private", **options
    )


@pytest.mark.parametrize("specialist", sorted(SPECIALISTS))
@pytest.mark.parametrize("name", RUN_NAMES)
def test_every_fixture_fits_every_specialist_budget(
    name: str, specialist: str, tmp_path: Path
) -> None:
    bundle = _build(name, specialist, tmp_path, budget_bytes=16 * 1024)
    assert bundle.size_bytes <= 16 * 1024
    assert json.loads(bundle.serialized) == dict(bundle.payload)
    assert bundle.payload["evidence_truncated"] is bundle.truncation.truncated


def test_verbose_reviewer_does_not_push_out_worker_evidence(tmp_path: Path) -> None:
    bundle = _build("map-verbose-reviewer", "graph_discovery", tmp_path, budget_bytes=64 * 1024)
    excerpts = {item["execution"]: item for item in bundle.payload["transcripts"]}
    reviewer = excerpts.pop("exec:ex-review-1")
    assert reviewer["records_dropped"] > 0
    assert len(excerpts) == 14
    for ref, excerpt in excerpts.items():
        assert excerpt["records"], ref
        assert excerpt["records_dropped"] == 0, ref
    assert bundle.truncation.truncated
    sections = {cut.section for cut in bundle.truncation.cuts}
    assert "transcripts[].records" in sections


def test_every_execution_keeps_an_excerpt_when_the_budget_allows(tmp_path: Path) -> None:
    bundle = _build("map-verbose-reviewer", "graph_discovery", tmp_path, budget_bytes=24 * 1024)
    assert bundle.size_bytes <= 24 * 1024
    kept = {item["execution"] for item in bundle.payload["transcripts"] if item["records"]}
    assert kept == {item["ref"] for item in bundle.payload["executions"]}


def test_execution_identities_survive(tmp_path: Path) -> None:
    record = load_run_record(RUNS / "retry-and-review")
    bundle = build_evidence(record, "graph_discovery", private_dir=tmp_path / "p")
    listed = [(e["ref"], e["node"], e["occurrence"], e["attempt"], e["status"])
              for e in bundle.payload["executions"]]  # fmt: skip
    assert listed == [
        (f"exec:{e.id}", e.node_id, e.occurrence, e.attempt, e.status) for e in record.executions
    ]
    assert len({ref for ref, *_ in listed}) == 6
    assert {item["execution"] for item in bundle.payload["transcripts"]} == {
        ref for ref, *_ in listed
    }


def test_secrets_in_runtime_and_transcripts_never_reach_the_evidence(tmp_path: Path) -> None:
    for specialist in SPECIALISTS:
        bundle = _build("retry-and-review", specialist, tmp_path / specialist)
        texts = [bundle.serialized] + [p.read_text("utf-8") for p in bundle.private_files.values()]
        for text in texts:
            for secret in FAKE_SECRETS:
                assert secret not in text, (specialist, secret)
    runtime = json.loads((tmp_path / "graph_maintenance" / "private" / "runtime.json").read_text())
    assert runtime["providers"]["anthropic"]["apiKey"] == "[redacted]"
    assert runtime["env"]["GITHUB_TOKEN"] == "[redacted]"
    assert runtime["env"]["FEATURE_FLAGS"] == "legacy-checkout"
    assert runtime["activeMemory"]["nodeInjectionTokens"] == 16000


def test_private_files_are_private_and_complete(tmp_path: Path) -> None:
    record = load_run_record(RUNS / "clean-success")
    bundle = build_evidence(record, "graph_maintenance", private_dir=tmp_path / "p")
    assert stat.S_IMODE((tmp_path / "p").stat().st_mode) == 0o700
    for path in bundle.private_files.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert bundle.payload["private_files"] == {
        "graph": "graph.json",
        "initial_input": "initial-input.txt",
        "runtime": "runtime.json",
    }
    graph = json.loads(bundle.private_files["graph"].read_text("utf-8"))
    assert graph == record.graph.raw


def test_large_authored_graph_is_inline_within_16_kib_and_whole_in_the_private_file(
    tmp_path: Path,
) -> None:
    record = load_run_record(RUNS / "clean-success")
    raw = json.loads(json.dumps(record.graph.raw))
    raw["nodes"][0]["instructions"] = "Follow the checklist. " * 3000
    data = record.document(RUNS / "clean-success")
    data["graph"] = raw
    del data["graph_hash"]
    big = parse_run_record(data, RUNS / "clean-success")
    bundle = build_evidence(big, "graph_maintenance", private_dir=tmp_path / "p")
    inline = json.dumps(bundle.payload["graph"], sort_keys=True, separators=(",", ":"))
    assert len(inline.encode()) <= 16 * 1024
    assert "…[cut " in bundle.payload["graph"]["nodes"][0]["instructions"]
    assert any(cut.section == "graph" for cut in bundle.truncation.cuts)
    full = json.loads(bundle.private_files["graph"].read_text("utf-8"))
    assert full["nodes"][0]["instructions"] == raw["nodes"][0]["instructions"]


def test_maintenance_receives_every_supplied_lesson_and_its_deliveries(tmp_path: Path) -> None:
    changes = [{"id": GRAPH_LESSON["id"], "before_revision": 1, "current_revision": 1}]
    bundle = _build("retry-and-review", "graph_maintenance", tmp_path,
                    lessons=[GRAPH_LESSON], lesson_changes=changes)  # fmt: skip
    assert bundle.payload["lessons"] == [GRAPH_LESSON]
    assert bundle.payload["lesson_changes"] == changes
    delivered = {item["lesson"]: item for item in bundle.payload["deliveries"]}
    assert delivered["lesson-01JWKR2B7D5F3H1K9M8N6P4Q2S@1"]["channels"] == ["prompt"]
    assert delivered["lesson-01JWKQ7Z3M8V4T2R6N0P5X9C1B@2"]["count"] == 2
    assert "transcripts" not in bundle.payload
    assert bundle.payload["graph"]["name"] == "implement-review"


def test_a_lesson_of_the_other_scope_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EvidenceError, match="only receives repository lessons"):
        _build("clean-success", "repository_maintenance", tmp_path, lessons=[GRAPH_LESSON])


def test_lessons_that_overflow_the_budget_fail_instead_of_being_dropped(tmp_path: Path) -> None:
    lessons = [{**REPOSITORY_LESSON, "id": f"lesson-{i:026d}", "recommendation": "r" * 600}
               for i in range(40)]  # fmt: skip
    with pytest.raises(EvidenceError, match="supply fewer lessons per batch"):
        _build("clean-success", "repository_maintenance", tmp_path,
               lessons=lessons, budget_bytes=8 * 1024)  # fmt: skip


def test_same_input_gives_byte_identical_evidence(tmp_path: Path) -> None:
    first = _build("map-verbose-reviewer", "repository_discovery", tmp_path / "a",
                   budget_bytes=32 * 1024)  # fmt: skip
    second = _build("map-verbose-reviewer", "repository_discovery", tmp_path / "b",
                    budget_bytes=32 * 1024)  # fmt: skip
    assert first.serialized == second.serialized
    assert first.serialized == json.dumps(
        json.loads(first.serialized), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def test_untruncated_evidence_says_so(tmp_path: Path) -> None:
    bundle = _build("clean-success", "repository_discovery", tmp_path)
    assert bundle.payload["evidence_truncated"] is False
    assert bundle.payload["truncation"]["cuts"] == []
    assert bundle.payload["checkout"]["repository"] == "forge:github.com/example/order-service"


def test_cancellation_stops_reading_history(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(EvidenceCancelled):
        _build("map-verbose-reviewer", "graph_discovery", tmp_path, cancel=token,
               page_limits=PageLimits(max_records=8))  # fmt: skip


@pytest.mark.parametrize(
    ("options", "message"),
    [({"budget_bytes": 1000}, "below the minimum"), ({}, "unknown specialist")],
)
def test_bad_arguments_are_refused(tmp_path: Path, options: Any, message: str) -> None:
    specialist = "graph_discovery" if options else "historian"
    with pytest.raises(EvidenceError, match=message):
        _build("clean-success", specialist, tmp_path, **options)
