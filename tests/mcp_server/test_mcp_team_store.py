"""``active-memory mcp --store postgresql://…`` (or the service's URL) serves the team store:
recall, list and explain read the tenant's lessons and its quarantine, still only the
workspace's."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from active_memory.mcp_server.reads import StoreReads
from active_memory.mcp_server.server import McpTools
from active_memory.mcp_server.workspace import Workspace
from active_memory.models.changes import Mutation, Publication
from active_memory.store.postgres import PostgresStore
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.select import TENANT_ENV
from cli_runner import run_cli
from mcp_server.kit import Served, serve_fixture, served_lessons, text_of
from recall.kit import lesson, lesson_id

CONFIG = "src/widgets/config.py"
_tenants = itertools.count(1)


@pytest.fixture
def team(pg_database: str, tmp_path: Path) -> tuple[Served, PostgresStore]:
    """The widgets checkout, and its lessons in a fresh PostgreSQL tenant."""
    served = serve_fixture(tmp_path)
    store = PostgresStore(pg_database, tenant=f"mcp{next(_tenants)}", pool_size=2)
    mutations = tuple(
        Mutation(op="upsert", id=item.id, expected_revision=0, draft=item.draft)
        for item in served_lessons()
    )
    store.publish(Publication(run_id="seed", mutations=mutations))
    return served, store


def test_recall_list_and_explain_read_the_team_store(team: tuple[Served, PostgresStore]) -> None:
    served, store = team
    held = lesson(50, files=[CONFIG], title="Held for review").draft
    store.hold([QuarantineEntry(lesson_id(50), "run-q", "r", ("s:c",), held, "")])
    with store:
        tools = McpTools(StoreReads(None, Workspace.at(served.workspace), team=store))
        recalled = text_of(tools.call("recall", {"kind": "file", "value": CONFIG}))
        assert f"[{lesson_id(1)}@1]" in recalled
        assert "Other config card" not in recalled  # another repository's, same path
        listed = text_of(tools.call("list", {}))
        assert lesson_id(1) in listed
        assert lesson_id(11) not in listed
        explained = tools.call("explain", {"id": lesson_id(1)})
        assert not explained.is_error
        assert explained.structured_content is not None
        assert explained.structured_content["ledger"]["live"] is True
        # Another repository's lesson is reported as an id that does not exist.
        assert tools.call("explain", {"id": lesson_id(11)}).is_error


def test_the_command_serves_a_postgresql_store(
    team: tuple[Served, PostgresStore], pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, store = team
    served_tools: list[McpTools] = []

    def serve(tools: McpTools) -> None:  # stands for the stdio loop: one call, then EOF
        served_tools.append(tools)
        assert f"[{lesson_id(1)}@1]" in text_of(
            tools.call("recall", {"kind": "file", "value": CONFIG})
        )

    monkeypatch.setattr("active_memory.mcp_server.server.serve_stdio", serve)
    monkeypatch.chdir(served.workspace)
    result = run_cli(["mcp", "--store", pg_database], env={TENANT_ENV: store.tenant})
    store.close()
    assert result.exit_code == 0, result.output
    assert len(served_tools) == 1
    assert result.stderr.startswith("active-memory mcp: serving forge:github.com/acme/widgets")
    assert "secret" not in result.stderr  # the URL is never printed whole
