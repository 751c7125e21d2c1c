from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from active_memory.errors import RunRecordError
from active_memory.models.run_schema import (
    main as run_schema_main,
    render_schema,
    shipped_schema,
    shipped_schema_path,
)
from active_memory.models.runs import (
    RUN_FILE,
    AuthoredGraph,
    Binding,
    Checkout,
    Delivery,
    Execution,
    GraphNode,
    Outcome,
    RunRecord,
    ToolReceipt,
    canonical_json,
    dump_run_record,
    graph_hash,
    load_run_record,
    parse_run_record,
)
from fixture_runs import RUN_NAMES, RUNS, materialize


def _copy(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(RUNS / name, folder)
    return folder


def _edit(folder: Path, change: Any) -> None:
    data = json.loads((folder / RUN_FILE).read_text("utf-8"))
    change(data)
    (folder / RUN_FILE).write_text(json.dumps(data), "utf-8")


@pytest.mark.parametrize("name", RUN_NAMES)
def test_every_fixture_run_loads_with_its_graph_hash_over_the_authored_json(name: str) -> None:
    record = load_run_record(RUNS / name)
    raw = json.loads((RUNS / name / RUN_FILE).read_text("utf-8"))["graph"]
    assert record.graph.raw == raw
    assert record.graph_hash == graph_hash(raw)
    assert record.checkout is not None
    assert (record.checkout.path / "src" / "app" / "config.py").is_file()
    for execution in record.executions:
        assert execution.transcript is not None
        assert execution.transcript.is_file()


def test_loading_run_json_or_its_folder_gives_the_same_record() -> None:
    folder = RUNS / "clean-success"
    assert load_run_record(folder) == load_run_record(folder / RUN_FILE)


def test_retry_and_review_keeps_each_attempt_and_occurrence_apart() -> None:
    record = load_run_record(RUNS / "retry-and-review")
    implement = [(e.occurrence, e.attempt, e.status) for e in record.executions
                 if e.node_id == "implement"]  # fmt: skip
    assert implement == [(1, 1, "error"), (1, 2, "timeout"), (1, 3, "completed"),
                         (2, 1, "completed")]  # fmt: skip


def test_dump_then_load_round_trips_and_copies_outside_transcripts(tmp_path: Path) -> None:
    record = load_run_record(RUNS / "retry-and-review")
    run_file = dump_run_record(record, tmp_path / "copy")
    again = load_run_record(run_file)
    assert again.graph_hash == record.graph_hash
    assert [e.id for e in again.executions] == [e.id for e in record.executions]
    for before, after in zip(record.executions, again.executions, strict=True):
        assert after.transcript is not None
        assert after.transcript.is_relative_to(tmp_path / "copy")
        assert before.transcript is not None
        assert after.transcript.read_bytes() == before.transcript.read_bytes()
    assert again.receipts == record.receipts
    assert again.deliveries == record.deliveries
    # A saved run holds what its agents read: the record and every copy are this user's only.
    saved = [run_file, *(e.transcript for e in again.executions if e.transcript is not None)]
    assert {oct(path.stat().st_mode & 0o777) for path in saved} == {"0o600"}
    assert not [p for p in (tmp_path / "copy").rglob(".*.tmp")]


def test_dump_in_place_keeps_transcript_paths(tmp_path: Path) -> None:
    folder = _copy("clean-success", tmp_path)
    record = load_run_record(folder)
    dump_run_record(record, folder)
    data = json.loads((folder / RUN_FILE).read_text("utf-8"))
    assert [e["transcript"] for e in data["executions"]] == [
        "transcripts/implement-1.jsonl",
        "transcripts/review-1.jsonl",
    ]
    assert data["checkout"]["path"] == "checkout"


def test_materialized_checkout_is_a_git_repo_with_its_commit_recorded(tmp_path: Path) -> None:
    folder, commit = materialize("clean-success", tmp_path)
    record = load_run_record(folder)
    assert record.checkout is not None
    assert record.checkout.commit == commit
    assert (record.checkout.path / ".git").is_dir()


def _set(path: list[Any], value: Any) -> Any:
    def change(data: Any) -> None:
        target = data
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return change


def _delete(path: list[Any]) -> Any:
    def change(data: Any) -> None:
        target = data
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return change


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_set(["executions", 3, "node"], "reviewer"), "executions[3].node"),
        (_delete(["executions", 1, "status"]), "executions[1].status"),
        (_set(["executions", 2, "status"], "exploded"), "executions[2].status"),
        (_set(["executions", 4, "id"], "ex-implement-1a1"), "executions[4].id"),
        (_set(["executions", 4, "occurrence"], 1), "executions[4].attempt"),
        (_set(["executions", 0, "ended_ms"], 1), "executions[0].ended_ms"),
        (_set(["executions", 0, "transcript"], "../../clean-success/run.json"),
         "executions[0].transcript"),
        (_set(["executions", 0, "transcript"], "/etc/passwd"), "executions[0].transcript"),
        (_set(["receipts", 5, "seq"], 0), "receipts[5].seq"),
        (_set(["receipts", 2, "execution"], "ex-nope"), "receipts[2].execution"),
        (_set(["deliveries", 0, "node_id"], "deploy"), "deliveries[0].node_id"),
        (_set(["graph", "nodes", 1, "id"], "implement"), "graph.nodes[1].id"),
        (_delete(["graph", "nodes", 0, "binding", "model"]), "graph.nodes[0].binding.model"),
        (_set(["graph_hash"], "0" * 64), "graph_hash"),
        (_set(["checkout", "repository"], "https://user:pw@example.com/x.git"),
         "checkout.repository"),
        (_set(["surprise"], True), "surprise"),
        (_delete(["run_id"]), "run_id"),
    ],
)  # fmt: skip
def test_malformed_record_names_the_bad_field(tmp_path: Path, change: Any, field: str) -> None:
    folder = _copy("retry-and-review", tmp_path)
    _edit(folder, change)
    with pytest.raises(RunRecordError) as caught:
        load_run_record(folder)
    assert caught.value.path == field
    assert str(folder / RUN_FILE) in str(caught.value)


def test_record_that_is_not_json_fails_at_the_root(tmp_path: Path) -> None:
    (tmp_path / RUN_FILE).write_text("{not json", "utf-8")
    with pytest.raises(RunRecordError) as caught:
        load_run_record(tmp_path)
    assert caught.value.path == "$"
    assert "not valid JSON" in caught.value.problem


def test_missing_record_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(RunRecordError, match=r"run record folder or its run\.json"):
        load_run_record(tmp_path / "nowhere")


def test_dump_of_a_bad_record_writes_nothing(tmp_path: Path) -> None:
    record = load_run_record(RUNS / "clean-success")
    broken = record.model_copy(update={"executions": record.executions + record.executions[:1]})
    target = tmp_path / "out"
    with pytest.raises(RunRecordError, match="repeats execution id"):
        dump_run_record(broken, target)
    assert not target.exists()


def test_run_record_schema_is_strict_draft_2020_12() -> None:
    schema = shipped_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    for name in ("Execution", "ToolReceipt", "Delivery", "Outcome", "Checkout"):
        assert schema["$defs"][name]["additionalProperties"] is False
    # The authored graph belongs to the host: keys the model does not read are allowed there.
    for name in ("AuthoredGraph", "GraphNode", "Binding"):
        assert "additionalProperties" not in schema["$defs"][name]


def test_shipped_schema_is_the_one_generated_from_the_model() -> None:
    shipped = shipped_schema_path().read_text("utf-8")
    assert shipped == render_schema(), "run `python -m active_memory.models.run_schema`"
    assert run_schema_main(["--check"]) == 0


@pytest.mark.parametrize("name", RUN_NAMES)
def test_fixture_records_are_valid_against_the_shipped_schema(name: str) -> None:
    data = json.loads((RUNS / name / RUN_FILE).read_text("utf-8"))
    assert list(Draft202012Validator(shipped_schema()).iter_errors(data)) == []


def test_schema_and_model_refuse_the_same_malformed_field(tmp_path: Path) -> None:
    data = json.loads((RUNS / "clean-success" / RUN_FILE).read_text("utf-8"))
    data["executions"][0]["occurrence"] = 0
    errors = list(Draft202012Validator(shipped_schema()).iter_errors(data))
    assert [list(error.absolute_path) for error in errors] == [["executions", 0, "occurrence"]]
    with pytest.raises(RunRecordError) as caught:
        parse_run_record(data, tmp_path)
    assert caught.value.path == "executions[0].occurrence"
    assert "must be at least 1" in caught.value.problem


def test_graph_hash_is_sha256_of_canonical_json() -> None:
    import hashlib

    authored = {"nodes": [{"kind": "worker", "id": "a"}], "name": "é"}
    expected = hashlib.sha256(canonical_json(authored).encode("utf-8")).hexdigest()
    assert graph_hash(authored) == expected
    assert canonical_json(authored) == '{"name":"é","nodes":[{"id":"a","kind":"worker"}]}'


def _built_record(transcript: Path | None = None) -> RunRecord:
    binding = Binding(provider="anthropic", model="claude-test", effort="high", connections=("gh",))
    graph = AuthoredGraph(
        name="built",
        nodes=(
            GraphNode(id="plan", kind="worker", binding=binding, instructions="Plan it."),
            GraphNode(id="fan", kind="map"),
        ),
    )
    return RunRecord(
        run_id="run-built",
        graph=graph,
        runtime={"harness": "test", "nested": {"depth": [1, 2.5, None]}},
        executions=(
            Execution(id="e1", node_id="plan", occurrence=1, attempt=1, status="completed",
                      started_ms=10, ended_ms=20, transcript=transcript),
            Execution(id="e0", node_id="plan", occurrence=2, attempt=1, status="completed",
                      started_ms=1, ended_ms=2, imported=True),
        ),
        outcome=Outcome(status="succeeded", latched_ms=30),
        receipts=(ToolReceipt(seq=0, execution="e1", time_ms=12, tool="Read", paths=("a.py",)),),
        deliveries=(
            Delivery(lesson_id="lesson-1", revision=2, node_id="plan", conversation_id="c1",
                     channel="prompt", execution="e1"),
        ),
    )  # fmt: skip


def test_a_record_built_in_code_loads_back_equal_with_its_bindings(tmp_path: Path) -> None:
    transcript = tmp_path / "out" / "transcripts" / "e1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text('{"role": "user", "text": "go"}\n', "utf-8")
    record = _built_record(transcript)
    again = load_run_record(dump_run_record(record, tmp_path / "out"))
    assert again == record
    node = again.graph.node("plan")
    assert node is not None
    assert node.binding == record.graph.nodes[0].binding
    assert again.graph_hash == graph_hash(record.graph.raw)
    assert [e.imported for e in again.executions] == [False, True]


def test_host_keys_of_the_authored_graph_stay_in_raw_and_in_the_hash(tmp_path: Path) -> None:
    record = load_run_record(RUNS / "retry-and-review")
    raw = record.graph.raw
    assert isinstance(raw, dict)
    assert "edges" in raw
    assert "retry" in raw["nodes"][0]
    assert "retry" not in record.graph.nodes[0].model_dump()
    again = load_run_record(dump_run_record(record, tmp_path / "copy"))
    assert again.graph.raw == raw
    assert again.graph_hash == record.graph_hash


@pytest.mark.parametrize(
    ("build", "field", "rule"),
    [
        (lambda: Execution(id="e", node_id="n", occurrence=0, attempt=1, status="completed",
                           started_ms=0), "occurrence", "must be at least 1"),
        (lambda: Execution(id="e", node_id="n", occurrence=1, attempt=1, status="completed",
                           started_ms=5, ended_ms=4), "ended_ms", "is before started_ms"),
        (lambda: Checkout(path=Path("/x"), repository="https://u:p@example.com/r.git"),
         "repository", "credential-free"),
        (lambda: GraphNode(id="a b", kind="worker"), "id", "pattern"),
        (lambda: AuthoredGraph(name="g", nodes=(GraphNode(id="a", kind="worker"),) * 2),
         "nodes[1].id", "repeats node id 'a'"),
        (lambda: AuthoredGraph(name="g", nodes=(GraphNode(id="a", kind="worker"),),
                               raw={"name": "g", "nodes": [{"id": "b", "kind": "worker"}]}),
         "raw", "does not match name and nodes"),
        (lambda: ToolReceipt(seq=0, time_ms=0, tool="Read", paths=["a.py", 3]), "paths[1]",
         "must be a string"),
    ],
)  # fmt: skip
def test_building_a_part_checks_its_own_fields(build: Any, field: str, rule: str) -> None:
    with pytest.raises(RunRecordError) as caught:
        build()
    assert caught.value.path == field
    assert rule in caught.value.problem


def test_a_record_held_in_memory_is_not_checked_for_links_until_it_is_written(
    tmp_path: Path,
) -> None:
    record = _built_record()
    stray = Execution(id="aux", node_id="postmortem", occurrence=1, attempt=1,
                      status="completed", started_ms=0)  # fmt: skip
    partial = record.model_copy(update={"executions": (*record.executions, stray)})
    assert partial.execution("aux") == stray
    with pytest.raises(RunRecordError, match=r"executions\[2\]\.node: 'postmortem' is not a node"):
        dump_run_record(partial, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_document_names_executions_by_node_not_by_the_attribute(tmp_path: Path) -> None:
    data = _built_record().document(tmp_path)
    assert data["format"] == "active-memory/run-record@1"
    assert list(data)[:7] == ["format", "run_id", "outcome", "checkout", "initial_input",
                              "graph_hash", "graph"]  # fmt: skip
    assert data["executions"][0]["node"] == "plan"
    data["executions"][0]["node_id"] = data["executions"][0].pop("node")
    with pytest.raises(RunRecordError) as caught:
        parse_run_record(data, tmp_path)
    assert caught.value.path == "executions[0].node_id"


def test_whole_number_times_written_as_doubles_load_as_integers(tmp_path: Path) -> None:
    folder = _copy(RUN_NAMES[0], tmp_path)
    _edit(folder, lambda data: data["executions"][0].update(started_ms=1748772001500.0))
    assert load_run_record(folder).executions[0].started_ms == 1748772001500
    _edit(folder, lambda data: data["executions"][0].update(started_ms=1.5))
    with pytest.raises(RunRecordError, match=r"executions\[0\]\.started_ms: must be an integer"):
        load_run_record(folder)


def test_a_plain_execution_is_dumped_without_the_imported_flag(tmp_path: Path) -> None:
    record = load_run_record(RUNS / RUN_NAMES[0])
    written = json.loads(dump_run_record(record, tmp_path / "out").read_text("utf-8"))
    assert all("imported" not in execution for execution in written["executions"])
    flagged = record.executions[0].model_copy(update={"imported": True})
    assert flagged.model_dump(mode="json", by_alias=True)["imported"] is True


def test_a_null_graph_hash_is_refused_like_the_schema_refuses_it(tmp_path: Path) -> None:
    folder = _copy(RUN_NAMES[0], tmp_path)
    _edit(folder, lambda data: data.update(graph_hash=None))
    with pytest.raises(RunRecordError, match="graph_hash: must be a string, got null"):
        load_run_record(folder)
