"""``explain`` over three recorded runs: the lesson's ledger, as ``lessons stats`` counts it.

``explain`` only reads, and the ledger is counted from the run records, not from anything the
server keeps: the tests that read the recorded runs ask one server (``explainer``, which
reads them as ``--runs`` names them); the one without runs asks the same tools in this process
(``local_session``), with a runs folder that holds none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client

from active_memory.models.runs import RunRecord
from ledger.ledger_kit import G1, R1, R2, record_three_runs
from mcp_server.kit import Served, hold_session, local_session, text_of

# The shared server's session lives on the module's event loop; every test here runs on it.
pytestmark = pytest.mark.asyncio(loop_scope="module")
HOSTED_TIMEOUT_S = 600  # the shared session outlives a test; each request keeps its own bound


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Served, list[RunRecord]]:
    tmp_path = tmp_path_factory.mktemp("mcp-ledger")
    runs = record_three_runs(tmp_path)
    checkout = tmp_path / "first" / "checkout"  # forge:github.com/example/order-service
    served = Served(checkout, tmp_path, tmp_path / "state" / "lessons.sqlite3",
                    tmp_path / "server-stderr.log")  # fmt: skip
    return served, runs


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def explainer(recorded: tuple[Served, list[RunRecord]]) -> AsyncIterator[Client]:
    """One server reading the recorded runs, for every test that explains from them."""
    served, _ = recorded
    client, close = await hold_session(
        served, args=["--runs", str(served.other)], timeout_s=HOSTED_TIMEOUT_S
    )
    yield client
    await close()


async def explain(client: Client, lesson_id: str) -> tuple[dict[str, Any], str]:
    result = await client.call_tool("explain", {"id": lesson_id})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return result.structured_content, text_of(result)


async def test_explain_returns_the_ledger_of_a_live_lesson(
    recorded: tuple[Served, list[RunRecord]], explainer: Client
) -> None:
    _, (first, second, third) = recorded
    data, text = await explain(explainer, R2)
    ledger = data["ledger"]
    assert (ledger["id"], ledger["live"], ledger["delivered"]) == (R2, True, 3)
    assert ledger["outcomes"] == {"failed": 1, "succeeded": 1}
    # The first run kept R2 without delivering it: its report's keep_ids say so.
    assert [(d["run_id"], d["action"]) for d in ledger["decisions"]] == [
        (first.run_id, "keep"),
        (second.run_id, "defer"),
        (third.run_id, "keep"),
    ]
    assert sorted(run["run_id"] for run in ledger["runs"]) == sorted([second.run_id, third.run_id])
    assert "ledger (counted from run records" in text
    assert "  delivered 3 time(s) to 3 conversation(s) in 2 run(s)" in text
    assert f"  decision defer in run {second.run_id} [report]" in text
    assert data["ledger_skipped"] == 0


async def test_explain_shows_a_retired_lesson_with_its_history_and_ledger(
    recorded: tuple[Served, list[RunRecord]], explainer: Client
) -> None:
    _, (_, second, _) = recorded
    data, text = await explain(explainer, R1)
    assert data["live"] is False
    assert data["card"] is None
    assert not text.startswith("<active_memory>\nPreviously observed guidance")
    assert [entry["op"] for entry in data["history"]] == ["upsert", "retire"]
    assert ("retire", second.run_id) in [
        (d["action"], d["run_id"]) for d in data["ledger"]["decisions"]
    ]


async def test_an_unqualified_graph_lesson_is_explained_from_the_repository(
    recorded: tuple[Served, list[RunRecord]], explainer: Client
) -> None:
    _, (first, _, _) = recorded
    data, _ = await explain(explainer, G1)
    assert data["scope"]["kind"] == "graph"
    assert data["ledger"]["delivered"] == 2
    assert [run["run_id"] for run in data["ledger"]["runs"]] == [first.run_id]


async def test_without_runs_the_ledger_still_shows_the_admission_of_each_revision(
    recorded: tuple[Served, list[RunRecord]], tmp_path: Path
) -> None:
    served, _ = recorded
    async with local_session(served, runs=[tmp_path]) as client:
        result = await client.call_tool("explain", {"id": R2})
    ledger = result.structured_content["ledger"]  # type: ignore[index]
    assert (ledger["delivered"], ledger["runs"]) == (0, [])
    assert [admitted["revision"] for admitted in ledger["revisions"]] == [1]
