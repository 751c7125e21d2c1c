"""Property: whatever valid record a host builds, writing it and reading it back gives it again."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from active_memory.models.runs import (
    AuthoredGraph,
    Binding,
    Checkout,
    Delivery,
    Execution,
    GraphNode,
    Outcome,
    RunRecord,
    ToolReceipt,
    dump_run_record,
    load_run_record,
)

IDS = st.from_regex(r"[A-Za-z0-9_.-]{1,16}", fullmatch=True).filter(lambda s: s not in (".", ".."))
# Any text JSON can carry through a UTF-8 file (lone surrogates cannot be encoded).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=24)
WORDS = TEXT.filter(lambda s: s != "")
MILLIS = st.integers(min_value=0, max_value=2**53)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,  # inf too
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
REPOSITORIES = st.sampled_from(
    ["forge:github.com/acme/shop", "local:" + "ab" * 8, "repo:widgets"]
)  # fmt: skip


@st.composite
def bindings(draw: st.DrawFn) -> Binding:
    return Binding(
        provider=draw(WORDS),
        model=draw(WORDS),
        effort=draw(st.none() | TEXT),
        lane=draw(st.none() | TEXT),
        connections=tuple(draw(st.lists(TEXT, max_size=3))),
    )


@st.composite
def graphs(draw: st.DrawFn) -> AuthoredGraph:
    ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    nodes = tuple(
        GraphNode(
            id=node_id,
            kind=draw(st.sampled_from(["worker", "verifier", "map", "join"])),
            binding=draw(st.none() | bindings()),
            instructions=draw(TEXT),
            output_contract=draw(JSON),
        )
        for node_id in ids
    )
    if not draw(st.booleans()):
        return AuthoredGraph(name=draw(WORDS), nodes=nodes)
    # As a host writes it: keys the model does not read, at the graph and at each node.
    name = draw(WORDS)
    raw_nodes = [{**node.model_dump(mode="json"), "retry": draw(JSON)} for node in nodes]
    raw = {"name": name, "nodes": raw_nodes, "edges": draw(JSON)}
    return AuthoredGraph(name=name, nodes=nodes, raw=raw)


@st.composite
def records(draw: st.DrawFn, folder: Path) -> RunRecord:
    graph = draw(graphs())
    node_ids = [node.id for node in graph.nodes]
    identities = draw(
        st.lists(
            st.tuples(st.sampled_from(node_ids), st.integers(1, 3), st.integers(1, 3)),
            max_size=5,
            unique=True,
        )
    )
    execution_ids = draw(st.lists(IDS, min_size=len(identities), max_size=len(identities),
                                  unique=True))  # fmt: skip
    executions = []
    for execution_id, (node, occurrence, attempt) in zip(execution_ids, identities, strict=True):
        started = draw(MILLIS)
        transcript = folder / "transcripts" / f"{execution_id}.jsonl"
        executions.append(
            Execution(
                id=execution_id,
                node_id=node,
                occurrence=occurrence,
                attempt=attempt,
                status=draw(st.sampled_from(["completed", "error", "timeout", "crashed"])),
                started_ms=started,
                ended_ms=draw(st.none() | st.integers(started, started + 10**6)),
                conversation_id=draw(st.none() | TEXT),
                completion=draw(st.none() | TEXT),
                transcript=draw(st.sampled_from([None, transcript])),
                imported=draw(st.booleans()),
            )
        )
    known = st.none() | st.sampled_from(execution_ids) if execution_ids else st.none()
    seqs = draw(st.lists(st.integers(0, 10**6), max_size=4, unique=True))
    receipts = tuple(
        ToolReceipt(seq=seq, execution=draw(known), time_ms=draw(MILLIS), tool=draw(WORDS),
                    paths=tuple(draw(st.lists(TEXT, max_size=3))))
        for seq in seqs
    )  # fmt: skip
    deliveries = tuple(
        Delivery(
            lesson_id=draw(WORDS),
            revision=draw(st.integers(1, 99)),
            node_id=draw(st.sampled_from(node_ids)),
            conversation_id=draw(WORDS),
            channel=draw(st.sampled_from(["hook", "prompt"])),
            execution=draw(known),
            time_ms=draw(st.none() | MILLIS),
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    checkout_path = draw(st.sampled_from([folder / "checkout", Path("/srv/checkouts/shop")]))
    checkout = Checkout(
        path=checkout_path,
        repository=draw(REPOSITORIES),
        commit=draw(st.none() | st.from_regex(r"[0-9a-f]{40}", fullmatch=True)),
    )
    outcome = Outcome(
        status=draw(st.sampled_from(["succeeded", "failed", "cancelled"])),
        latched_ms=draw(MILLIS),
        summary=draw(st.none() | TEXT),
    )
    runtime: dict[str, Any] = draw(st.dictionaries(TEXT, JSON, max_size=4))
    return RunRecord(
        run_id=draw(IDS),
        graph=graph,
        runtime=runtime,
        executions=tuple(executions),
        outcome=draw(st.none() | st.just(outcome)),
        checkout=draw(st.none() | st.just(checkout)),
        initial_input=draw(st.none() | TEXT),
        receipts=receipts,
        deliveries=deliveries,
    )


# One folder for every example, so that drawing a record never depends on where it is written.
FOLDER = Path(tempfile.mkdtemp(prefix="active-memory-round-trip-")) / "run"


@pytest.fixture(scope="module", autouse=True)
def _remove_the_folder() -> Iterator[None]:
    yield
    shutil.rmtree(FOLDER.parent, ignore_errors=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=records(FOLDER))
def test_load_of_dump_gives_the_record_back(record: RunRecord) -> None:
    shutil.rmtree(FOLDER, ignore_errors=True)
    for execution in record.executions:
        if execution.transcript is not None:
            execution.transcript.parent.mkdir(parents=True, exist_ok=True)
            execution.transcript.write_text('{"role": "user", "text": "go"}\n', "utf-8")
    run_file = dump_run_record(record, FOLDER)
    again = load_run_record(FOLDER)
    assert again == record
    assert again.graph_hash == record.graph_hash
    # Writing what was read changes nothing: the document is the record's one form.
    first = run_file.read_text("utf-8")
    dump_run_record(again, FOLDER)
    assert run_file.read_text("utf-8") == first
    assert json.loads(first)["graph"] == record.graph.raw
