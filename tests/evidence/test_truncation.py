"""The truncation report and the excerpts as the evidence payload carries them."""

from __future__ import annotations

from active_memory.evidence.history import Excerpt
from active_memory.evidence.truncation import Cut, CutLog, TruncationReport


def test_a_cut_says_only_what_it_removed() -> None:
    bare = Cut(section="receipts", reason="over budget", count=2)
    assert bare.model_dump(mode="json") == {"section": "receipts", "reason": "over budget",
                                            "count": 2}  # fmt: skip
    full = Cut(section="s", reason="r", count=1, bytes=10, refs=("exec:a",), more_refs=3)
    assert full.model_dump(mode="json") == {
        "section": "s", "reason": "r", "count": 1, "bytes": 10, "refs": ["exec:a"], "more_refs": 3
    }  # fmt: skip


def test_the_report_flags_truncation_and_leaves_its_own_size_out() -> None:
    log = CutLog()
    assert log.report(1024).model_dump(mode="json") == {
        "evidence_truncated": False, "budget_bytes": 1024, "cuts": []
    }  # fmt: skip
    for index in range(20):
        log.add("transcripts[].records", "budget", size=5, ref=f"exec:e{index}")
    report = log.report(1024, 900)
    assert isinstance(report, TruncationReport)
    assert (report.truncated, report.size_bytes) == (True, 900)
    data = report.model_dump(mode="json")
    assert set(data) == {"evidence_truncated", "budget_bytes", "cuts"}
    (cut,) = data["cuts"]
    assert (cut["count"], cut["bytes"], len(cut["refs"]), cut["more_refs"]) == (20, 100, 16, 4)


def test_an_excerpt_mentions_cuts_and_absence_only_when_there_are_some() -> None:
    read = Excerpt(execution="exec:a", records=({"n": 1, "text": "hi"},), records_total=1,
                   bytes_total=10, records_dropped=0, records_cut=0)  # fmt: skip
    assert read.model_dump(mode="json") == {
        "execution": "exec:a", "records": [{"n": 1, "text": "hi"}], "records_total": 1,
        "bytes_total": 10, "records_dropped": 0,
    }  # fmt: skip
    missing = read.model_copy(update={"records": (), "records_cut": 2, "unavailable": "gone"})
    assert missing.model_dump(mode="json")["unavailable"] == "gone"
    assert missing.model_dump(mode="json")["records_cut"] == 2
