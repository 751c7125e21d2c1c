"""A specialist reads a record the budget cut back through read_transcript, and cites it."""

from __future__ import annotations

import json
from pathlib import Path

from active_memory.agents.providers.scripted import tool_call, tool_calls_response
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.specialist_trial import try_specialist
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider, answer_response
from evidence.copies_kit import FAILURE_RECEIPT, SECRET, cut_run
from postmortem.postmortem_kit import by_labels, config_of

LESSON = {
    "title": "Check the sku mapping before the export runs",
    "recommendation": "When the export fails on a missing key, compare the catalogue's sku "
    "mapping with the export's fields before changing the exporter.",
    "associations": None,
    "node_id": "work",
    "references": [f"receipt:{FAILURE_RECEIPT}"],
    "reason": "The export failed with a KeyError on sku in a record the excerpt left out.",
    "repository_specific": False,
}


async def test_a_discovery_specialist_reads_a_cut_record_and_cites_it(tmp_path: Path) -> None:
    record = cut_run(tmp_path / "run", long_records=400)
    arguments = {"execution": "exec:long", "from_record": 5, "max_records": 1, "text_offset": None}
    read = tool_call("read_transcript", arguments, id="t1")
    provider = ScriptedProvider(by_labels({
        ("graph_discovery", 0, 1): tool_calls_response(read),
        ("graph_discovery", 0, 2): answer_response({"lessons": [LESSON]}),
    }))  # fmt: skip
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        result = await try_specialist(record, "graph_discovery", PostmortemOptions(
            config=config_of(repository=False), backend=store, provider=provider,
            private_dir=tmp_path / "evidence", evidence_budget=16 * 1024,
        ))  # fmt: skip

    first, second = provider.requests
    evidence = str(first.messages[0])
    # The failure is not in the evidence: the budget cut it, and said how much it cut.
    assert "KeyError" not in evidence
    assert '"bytes_left_out":' in evidence
    assert "read_transcript" in first.system
    assert "read_transcript" in [tool.name for tool in first.tools]
    # The tool gave the cut record back, redacted, with the receipt the answer then cites.
    [shown] = [line for line in str(second.messages[-1]).split("\\n") if '"n": 5' in line]
    assert "then it failed: KeyError" in shown
    assert f'"receipt": "receipt:{FAILURE_RECEIPT}"' in shown
    assert SECRET not in str(second.messages)
    assert (result.complete, result.accepted, result.rejections) == (True, 1, ())
    assert json.loads(result.answer_json)["lessons"][0]["references"] == [
        f"receipt:{FAILURE_RECEIPT}"
    ]
