"""Run logs summarized across runs, by stage, code, specialist and prompt version."""

from __future__ import annotations

from active_memory.runlog_summary import summarize

RECORDS = [
    {"event": "rejection", "run_id": "r1", "role": "graph_discovery", "stage": "card",
     "code": "title_too_long", "time_ms": 1000},
    {"event": "rejection", "run_id": "r2", "role": "graph_discovery", "stage": "card",
     "code": "no_association", "time_ms": 3000},
    {"event": "rejection", "run_id": "r2", "role": "graph_discovery", "stage": "secret",
     "code": "aws_key", "time_ms": 3000},
    {"event": "postmortem_specialist", "run_id": "r1", "role": "graph_discovery",
     "status": "published", "accepted": 2, "rejected": 1, "input_tokens": 10,
     "cache_read_tokens": 6, "output_tokens": 2, "duration_ms": 5, "prompt_sha256": "a" * 64,
     "time_ms": 1000},
    {"event": "postmortem_specialist", "run_id": "r2", "role": "graph_discovery",
     "status": "failed", "accepted": 0, "rejected": 2, "input_tokens": 7, "output_tokens": 1,
     "cache_read_tokens": 5,
     "duration_ms": 4, "error_code": "timed_out", "prompt_sha256": "b" * 64, "time_ms": 3000},
    {"event": "postmortem_specialist", "run_id": "r2", "role": "graph_maintenance",
     "status": "published", "kept": 1, "adapted": 1, "time_ms": 3000},
    {"event": "postmortem", "run_id": "r1", "status": "completed", "time_ms": 1000},
    {"event": "postmortem", "run_id": "r2", "status": "partial", "time_ms": 3000},
]  # fmt: skip


def test_rejections_are_counted_by_stage_most_first() -> None:
    summary = summarize(RECORDS, by="stage")
    assert [(row.key, row.rejections) for row in summary.rows] == [("card", 2), ("secret", 1)]
    assert (summary.runs, dict(summary.postmortems)) == (2, {"completed": 1, "partial": 1})


def test_rejections_are_counted_by_stage_and_code() -> None:
    keys = [row.key for row in summarize(RECORDS, by="code").rows]
    assert keys == ["card:no_association", "card:title_too_long", "secret:aws_key"]


def test_specialists_add_up_their_runs_decisions_tokens_and_errors() -> None:
    rows = {row.key: row for row in summarize(RECORDS, by="specialist").rows}
    discovery = rows["graph_discovery"]
    assert (discovery.sessions, discovery.accepted, discovery.rejected) == (2, 2, 3)
    assert (discovery.input_tokens, discovery.output_tokens, discovery.duration_ms) == (17, 3, 9)
    # The cached part of the input adds up too (a log written before it was recorded counts 0).
    assert discovery.cache_read_tokens == 11
    assert rows["graph_maintenance"].cache_read_tokens == 0
    assert dict(discovery.errors) == {"timed_out": 1}
    assert rows["graph_maintenance"].accepted == 2  # kept + adapted decisions


def test_each_prompt_version_is_its_own_row() -> None:
    keys = sorted(row.key for row in summarize(RECORDS, by="prompt").rows)
    assert keys == ["graph_discovery aaaaaaaaaaaaaaaa", "graph_discovery bbbbbbbbbbbbbbbb",
                    "graph_maintenance unknown"]  # fmt: skip


def test_since_keeps_only_later_records() -> None:
    summary = summarize(RECORDS, by="stage", since_ms=2000, torn=2)
    assert [(row.key, row.rejections) for row in summary.rows] == [("card", 1), ("secret", 1)]
    assert (summary.runs, summary.torn) == (1, 2)


def test_the_python_dicts_keep_their_counts_sorted_by_key() -> None:
    # The CLI sorts keys when it prints; a host calling to_dict() gets the same order.
    from collections import Counter

    from active_memory.postmortem.specialist_eval import EvalDiff

    diff = EvalDiff(
        run="r1", added=(), removed=(),
        rejections_before=Counter({"secret": 1, "card": 2}),
        rejections_after=Counter({"scope": 1, "attribution": 3}),
    )  # fmt: skip
    data = diff.to_dict()
    assert list(data)[:3] == ["run", "changed", "failed"]
    assert list(data["rejections_before"]) == ["card", "secret"]
    assert list(data["rejections_after"]) == ["attribution", "scope"]
