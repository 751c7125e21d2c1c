"""The evidence budget policy at several scales: the budget is used, every execution is listed
or counted, and the records a lesson is made of (failures, rejected calls, first explorations,
a verifier's rejection) are the ones kept longest."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from active_memory.evidence.builder import EvidenceBundle, build_evidence
from active_memory.evidence.salience import Salience, SalienceClassifier
from active_memory.evidence.trim import Trimmer
from active_memory.evidence.truncation import CutLog
from active_memory.models.runs import RunRecord, load_run_record

BUDGET = 128 * 1024
BINDING = {"provider": "anthropic", "model": "claude-sonnet-4-5"}
GRAPH = {"name": "scale", "nodes": [
    {"id": "work", "kind": "worker", "binding": BINDING},
    {"id": "review", "kind": "verifier", "binding": BINDING},
]}  # fmt: skip


def _line(role: str, text: str, **extra: Any) -> str:
    return json.dumps({"role": role, "text": text, **extra}) + "\n"


def _worker(index: int, failed: bool, filler: int, reads: int) -> str:
    lines = [_line("user", f"Task: migrate src/app/module_{index}.py; run its test.")]
    for read in range(reads):
        module = f"src/app/module_{index}_{read}.py"
        lines += [
            _line("assistant", json.dumps({"file_path": module}), tool="Read"),
            _line(
                "tool",
                f"import os\nVALUE = os.environ['KEY_{index}']\n" + "# x\n" * filler,
                tool="Read",
            ),
        ]
    lines += [
        _line("assistant", json.dumps({"command": "pytest -q"}), tool="Bash"),
        _line(
            "tool",
            "[error] FAILED test_env - KeyError: 'FEATURE_FLAGS'" if failed else "1 passed",
            tool="Bash",
        ),
        _line("assistant", "Done."),
    ]
    return "".join(lines)


def _record(tmp_path: Path, executions: int, *, filler: int = 40, reads: int = 1) -> RunRecord:
    """``executions`` worker executions (every seventh fails once and is retried)."""
    (tmp_path / "t").mkdir(parents=True)
    items: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    for index in range(executions):
        failed = index % 7 == 3
        ident = f"e{index}"
        (tmp_path / "t" / f"{ident}.jsonl").write_text(_worker(index, failed, filler, reads))
        items.append({"id": ident, "node": "work", "occurrence": index + 1, "attempt": 1,
                      "status": "error" if failed else "completed", "started_ms": index,
                      "completion": "migrated", "transcript": f"t/{ident}.jsonl"})  # fmt: skip
        receipts.append({"seq": index, "execution": ident, "time_ms": index, "tool": "Bash",
                         "paths": [f"src/app/module_{index}.py"]})  # fmt: skip
    document = {"format": "active-memory/run-record@1", "run_id": "scale", "graph": GRAPH,
                "runtime": {}, "executions": items, "receipts": receipts}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps(document))
    return load_run_record(tmp_path)


Built = Callable[[int, int, int, str], tuple[Path, EvidenceBundle]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The evidence of ``_record(executions, filler, reads)`` for a specialist at the default
    budget, and the record's folder, built once per module: the tests below read different
    things of the same build (which they never change), and each build costs up to a second."""
    done: dict[tuple[int, int, int, str], tuple[Path, EvidenceBundle]] = {}

    def build(
        executions: int, filler: int, reads: int, specialist: str
    ) -> tuple[Path, EvidenceBundle]:
        key = (executions, filler, reads, specialist)
        if key not in done:
            folder = tmp_path_factory.mktemp("built")
            record = _record(folder / "rec", executions, filler=filler, reads=reads)
            bundle = build_evidence(record, specialist, private_dir=folder / "p",
                                    budget_bytes=BUDGET)  # fmt: skip
            done[key] = (folder / "rec", bundle)
        return done[key]

    return build


@pytest.mark.parametrize(
    ("executions", "filler", "reads"), [(1, 3_000, 14), (1, 20, 800), (12, 3_000, 1),
                                        (300, 40, 1), (1300, 4, 1)]
)  # fmt: skip
@pytest.mark.parametrize("specialist", ["graph_discovery", "repository_maintenance"])
def test_evidence_larger_than_the_budget_fills_at_least_nine_tenths_of_it(
    built: Built, executions: int, filler: int, reads: int, specialist: str
) -> None:
    folder, bundle = built(executions, filler, reads, specialist)
    shown = json.dumps(json.loads((folder / "run.json").read_text()))
    transcripts = sum(path.stat().st_size for path in (folder / "t").iterdir())
    if len(shown) + (transcripts if specialist == "graph_discovery" else 0) > BUDGET:
        assert bundle.size_bytes >= 0.9 * BUDGET
    assert bundle.size_bytes <= BUDGET
    # Every execution is listed until the listing alone passes the budget.
    assert len(bundle.payload["executions"]) == executions
    assert "executions_left_out" not in bundle.payload


def test_many_short_executions_no_longer_collapse_to_a_few_kilobytes(built: Built) -> None:
    _, bundle = built(1300, 4, 1, "graph_discovery")
    assert bundle.size_bytes >= 0.9 * BUDGET
    refs = [item["ref"] for item in bundle.payload["executions"]]
    assert refs == [f"exec:e{index}" for index in range(1300)]
    # No excerpt is an empty shell that costs bytes and shows nothing: the listing took the
    # budget, so no transcript was read, and the cut list says so.
    assert bundle.payload["transcripts"] == []
    [cut] = [cut for cut in bundle.truncation.cuts if cut.section == "transcripts"]
    assert (cut.count, cut.reason) == (1300, "the execution listing leaves no room for excerpts")


def test_with_a_few_hundred_executions_failures_outlive_other_executions_bare_tasks(
    built: Built,
) -> None:
    _, bundle = built(300, 40, 1, "graph_discovery")
    excerpts = bundle.payload["transcripts"]
    # The budget holds about 300 bare tasks: the 43 failed executions keep their failure, so
    # some clean executions lose their excerpt, never most of them.
    assert 250 <= len(excerpts) < 300
    assert all(excerpt["records"] for excerpt in excerpts)
    # The failed test runs outlive the passing ones and the routine reads.
    failed = [record for excerpt in excerpts for record in excerpt["records"]
              if record["text"].startswith("[error]")]  # fmt: skip
    assert len(failed) == len([index for index in range(300) if index % 7 == 3])


def test_a_listing_over_the_budget_keeps_the_failures_and_counts_the_rest_by_node(
    tmp_path: Path,
) -> None:
    record = _record(tmp_path / "rec", 1300, filler=4)
    bundle = build_evidence(record, "graph_maintenance", private_dir=tmp_path / "p",
                            budget_bytes=16 * 1024)  # fmt: skip
    listed = bundle.payload["executions"]
    left_out = bundle.payload["executions_left_out"]
    assert len(listed) + sum(left_out.values()) == 1300
    assert set(left_out) == {"work"}
    assert bundle.size_bytes >= 0.9 * 16 * 1024
    # The failed executions (and the first and latest) are listed before any other.
    failed = {f"exec:e{index}" for index in range(1300) if index % 7 == 3}
    assert {item["ref"] for item in listed} <= failed | {"exec:e0", "exec:e1299"}
    assert len(listed) > 100
    sections = {cut.section for cut in bundle.truncation.cuts}
    assert "executions" in sections


def _long_session(tmp_path: Path) -> RunRecord:
    """One 70-minute session: exploration and failures first, then long housekeeping."""
    (tmp_path / "t").mkdir(parents=True)
    lines = [_line("user", "Task: make the settings loader testable.")]
    for index in range(40):
        path = f"src/app/explore_{index}.py"
        lines.append(_line("assistant", json.dumps({"file_path": path}), tool="Read"))
        lines.append(_line("tool", f"# {path}\n" + "code line\n" * 120, tool="Read"))
        if index % 8 == 5:
            lines.append(_line("assistant", json.dumps({"command": f"pytest {path}"}),
                               tool="Bash"))  # fmt: skip
            lines.append(_line("tool", f"[error] FAILED {path} ImportError: loader {index}",
                               tool="Bash"))  # fmt: skip
    for index in range(400):
        # Housekeeping: re-reading explored files, passing tests, commits.
        path = f"src/app/explore_{index % 40}.py"
        lines.append(_line("assistant", json.dumps({"file_path": path}), tool="Read"))
        lines.append(_line("tool", f"# {path}\n" + "code line\n" * 120, tool="Read"))
        lines.append(_line("assistant", json.dumps({"command": "git commit -am wip"}),
                           tool="Bash"))  # fmt: skip
        lines.append(_line("tool", f"[main {index:07x}] wip", tool="Bash"))
    (tmp_path / "t" / "main.jsonl").write_text("".join(lines))
    document = {"format": "active-memory/run-record@1", "run_id": "long", "graph": GRAPH,
                "runtime": {}, "executions": [{"id": "main", "node": "work", "occurrence": 1,
                "attempt": 1, "status": "completed", "started_ms": 0,
                "transcript": "t/main.jsonl"}]}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps(document))
    return load_run_record(tmp_path)


def test_a_long_session_keeps_its_exploration_and_failures_over_its_housekeeping(
    tmp_path: Path,
) -> None:
    record = _long_session(tmp_path / "rec")
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "p",
                            budget_bytes=64 * 1024)  # fmt: skip
    [excerpt] = bundle.payload["transcripts"]
    texts = [item["text"] for item in excerpt["records"]]
    assert excerpt["records_dropped"] > 0
    failures = [text for text in texts if text.startswith("[error]")]
    assert len(failures) == 5
    # Each failed call is kept with its result.
    assert sum(1 for text in texts if text.startswith('{"command": "pytest')) == 5
    # The first look at every explored file outlives the re-reads of the housekeeping.
    first_reads = {n for n in range(40) if f"# src/app/explore_{n}.py" in "".join(texts[:200])}
    assert len(first_reads) == 40
    assert bundle.size_bytes >= 0.9 * 64 * 1024


def test_a_verifier_rejection_and_a_retry_are_lessons() -> None:
    tiers = SalienceClassifier()
    assert tiers.classify(0, role="assistant", tool=None, text="REJECT: flags leak",
                          verifier=True) == Salience.LESSON  # fmt: skip
    assert tiers.classify(0, role="assistant", tool=None, text="REJECT",
                          verifier=False) == Salience.CONTEXT  # fmt: skip
    assert tiers.classify(1, role="user", tool=None, text="Attempt 2: the last one crashed"
                          ) == Salience.LESSON  # fmt: skip
    assert tiers.classify(2, role="assistant", tool=None, text="Trying the loader.",
                          retried=True) == Salience.LESSON  # fmt: skip


def test_a_read_is_context_the_first_time_and_routine_after() -> None:
    tiers = SalienceClassifier()
    call = json.dumps({"file_path": "src/a.py"})
    assert tiers.classify(0, role="assistant", tool="Read", text=call) == Salience.CONTEXT
    assert tiers.classify(0, role="tool", tool="Read", text="raise ValueError") == Salience.CONTEXT
    assert tiers.classify(1, role="assistant", tool="Read", text=call) == Salience.ROUTINE
    assert tiers.classify(1, role="tool", tool="Read", text="x = 1") == Salience.ROUTINE
    assert tiers.classify(1, role="assistant", tool="Read", text=call) == Salience.ROUTINE
    assert tiers.classify(1, role="tool", tool="Read", text="[error] File does not exist"
                          ) == Salience.LESSON  # fmt: skip
    edit = json.dumps({"file_path": "src/a.py", "old": "x"})
    assert tiers.classify(1, role="assistant", tool="Edit", text=edit) == Salience.ORDINARY
    assert tiers.classify(1, role="tool", tool="Edit", text="ok") == Salience.ORDINARY
    bash = json.dumps({"command": "make test"})
    assert tiers.classify(1, role="assistant", tool="Bash", text=bash) == Salience.ORDINARY
    assert tiers.classify(1, role="tool", tool="Bash", text="Traceback (most recent call last):"
                          ) == Salience.LESSON  # fmt: skip


def _two_long_records(tmp_path: Path, text: str) -> RunRecord:
    (tmp_path / "t").mkdir(parents=True)
    lines = _line("user", "Task: run the suite.") + _line("tool", text, tool="Bash") * 2
    (tmp_path / "t" / "e.jsonl").write_text(lines)
    document = {"format": "active-memory/run-record@1", "run_id": "cuts", "graph": GRAPH,
                "runtime": {}, "executions": [{"id": "e", "node": "work", "occurrence": 1,
                "attempt": 1, "status": "completed", "started_ms": 0,
                "transcript": "t/e.jsonl"}]}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps(document))
    return load_run_record(tmp_path)


def test_a_source_cut_and_the_builders_cut_are_both_listed_with_their_bytes(
    tmp_path: Path,
) -> None:
    # A session source cut a 7.3 MB output to about 32 KiB, its marker in the middle.
    text = "HEAD " + "a" * 21_000 + "…[cut 7300000 bytes]…" + "b" * 11_000 + " TAIL"
    record = _two_long_records(tmp_path / "rec", text)
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "p",
                            budget_bytes=16 * 1024)  # fmt: skip
    cuts = {cut.reason: cut for cut in bundle.truncation.cuts
            if cut.section == "transcripts[].records[].text"}  # fmt: skip
    source = next(cut for reason, cut in cuts.items() if "session source" in reason)
    builder = cuts["record too long: cut with a marker"]
    assert (source.count, source.bytes) == (2, 2 * 7_300_000)
    assert builder.count == 2
    assert 0 < builder.bytes < 2 * len(text)
    [excerpt] = bundle.payload["transcripts"]
    for item in excerpt["records"][1:]:
        # The marker says how much of the original output is missing there: both cuts.
        [missing] = [int(n) for n in re.findall(r"…\[cut (\d+) bytes\]…", item["text"])]
        assert missing == 7_300_000 + builder.bytes // 2
        assert item["text"].startswith("HEAD ")
        assert item["text"].endswith(" TAIL")


@pytest.mark.parametrize("budget", [64 * 1024, 1024 * 1024])
def test_the_record_cap_follows_the_budget(tmp_path: Path, budget: int) -> None:
    record = _record(tmp_path / "rec", 40, filler=6_000)  # 40 reads of about 24 KB
    bundle = build_evidence(record, "repository_discovery", private_dir=tmp_path / "p",
                            budget_bytes=budget)  # fmt: skip
    longest = max(len(item["text"].encode()) for excerpt in bundle.payload["transcripts"]
                  for item in excerpt["records"])  # fmt: skip
    # Not a fixed 4 KiB: a sixteenth of the budget at most, shared among the executions.
    assert longest <= budget // 16 + 64
    assert longest > (4096 if budget > 128 * 1024 else 256)
    assert bundle.size_bytes >= 0.9 * budget


def test_receipts_keep_their_share_when_transcripts_fill_the_rest(tmp_path: Path) -> None:
    # 62 executions and 600 receipts used to keep 2 receipts in 103 KB of a 131 KB budget.
    _record(tmp_path / "rec", 62, filler=100, reads=3)
    document = json.loads((tmp_path / "rec" / "run.json").read_text())
    document["receipts"] = [{"seq": seq, "execution": f"e{seq % 62}", "time_ms": seq,
                             "tool": "Read", "paths": [f"src/m{seq}.py"]}
                            for seq in range(600)]  # fmt: skip
    (tmp_path / "rec" / "run.json").write_text(json.dumps(document))
    record = load_run_record(tmp_path / "rec")
    bundle = build_evidence(record, "graph_discovery", private_dir=tmp_path / "p")
    assert bundle.size_bytes >= 0.9 * BUDGET
    receipts = bundle.payload["receipts"]
    # About their eighth of the budget (some 100 bytes each) survives final trimming.
    assert len(receipts) * 100 >= BUDGET // 8
    assert len(bundle.payload["transcripts"]) == 62


def test_final_trimming_removes_an_emptied_excerpt_whole_and_drops_the_routine_first() -> None:
    def excerpt(ref: str, count: int) -> dict[str, Any]:
        records = [{"n": n, "role": "tool", "text": f"{ref} record {n} " + "x" * 300}
                   for n in range(count)]  # fmt: skip
        return {"execution": ref, "records": records, "records_total": count,
                "bytes_total": 0, "records_dropped": 0}  # fmt: skip

    payload: dict[str, Any] = {"executions": [], "transcripts": [excerpt("exec:a", 4),
                               excerpt("exec:b", 1)]}  # fmt: skip
    # exec:a's record 1 is a lesson, record 2 routine: the routine one goes first.
    tiers = {"exec:a": [4, 3, 0, 1], "exec:b": [4]}
    log = CutLog()
    whole = len(Trimmer(payload, 1 << 20, CutLog()).run().encode())
    # Over by less than one record (of some 330 bytes, once the cut is reported).
    serialized = Trimmer(payload, whole - 100, log, tiers=tiers).run()
    assert len(serialized.encode()) <= whole - 100
    kept = {item["execution"]: [record["n"] for record in item["records"]]
            for item in payload["transcripts"]}  # fmt: skip
    assert kept == {"exec:a": [0, 1, 3], "exec:b": [0]}
    serialized = Trimmer(payload, 700, log, tiers=tiers).run()
    # No excerpt is left as an empty shell.
    assert all(item["records"] for item in payload["transcripts"])
    assert len(serialized.encode()) <= 700


def test_a_listing_over_the_budget_keeps_the_verifier_and_failures_from_both_ends(
    tmp_path: Path,
) -> None:
    """More failures than the listing holds, then a verifier's rejection: the rejection, the
    first and the latest execution are listed, and the failures kept come from both ends."""
    _record(tmp_path / "rec", 700, filler=4)
    document = json.loads((tmp_path / "rec" / "run.json").read_text())
    for item in document["executions"]:
        item["status"] = "error"
    document["executions"].append({"id": "review", "node": "review", "occurrence": 1,
                                   "attempt": 1, "status": "completed", "started_ms": 9_000,
                                   "completion": "REJECT: the migration drops rows"})  # fmt: skip
    (tmp_path / "rec" / "run.json").write_text(json.dumps(document))
    # A quarter of the default budget: 700 failures are more than its listing holds.
    bundle = build_evidence(load_run_record(tmp_path / "rec"), "graph_discovery",
                            private_dir=tmp_path / "p", budget_bytes=32 * 1024)  # fmt: skip
    refs = [item["ref"] for item in bundle.payload["executions"]]
    assert bundle.payload["executions_left_out"]
    assert {"exec:e0", "exec:review", "exec:e699"} <= set(refs)
    failed = sorted(int(ref.removeprefix("exec:e")) for ref in refs if ref.startswith("exec:e"))
    assert failed[1] == 1, "the run's opening"
    assert failed[-2] == 698, "and its latest failures"
