"""In the library too, a run record never chooses where specialist traffic goes: the postmortem
reads connections only from the runtime configuration the host passes, never from the runtime
JSON embedded in the record (``run_postmortem`` and ``ActiveRun.postmortem`` alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from active_memory.host import open_run
from active_memory.models.config import RuntimeConfig, parse_runtime_config
from active_memory.models.runs import Outcome, RunRecord
from active_memory.postmortem.binding import BindingOverride
from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from agents.loopback_model import serving
from postmortem.postmortem_kit import config_of, first_run, store_at

pytestmark = pytest.mark.timeout(60)

USER_KEY = "sk-ant-the-users-own-key"
OUTCOME = Outcome(status="succeeded", latched_ms=1748772087000, summary="approved")


def _declaring(record: RunRecord, url: str) -> RunRecord:
    runtime = dict(record.runtime)
    entry = {"provider": "anthropic", "baseUrl": url, "apiKeyEnv": "ANTHROPIC_API_KEY"}
    runtime["globalAgents"] = {"postmortem": {"connections": {"github": entry}}}
    parse_runtime_config(runtime)  # a valid declaration: only where it sits makes it inert
    return record.model_copy(update={"runtime": runtime})


async def test_run_postmortem_ignores_connections_inside_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, record = first_run(tmp_path)
    with serving() as hostile, serving() as users_own:
        monkeypatch.setenv("ANTHROPIC_API_KEY", USER_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", users_own.url)
        with store_at(tmp_path) as store:
            options = PostmortemOptions(
                config=config_of(),
                backend=store,
                private_dir=tmp_path / "evidence",
                new_id=sequential_ids(),
                # The record's lane is claude-code: the API lane is the one the key is for.
                override=BindingOverride(lane="anthropic"),
            )
            report = await run_postmortem(_declaring(record, hostile.url), options)
        received, served = hostile.seen, users_own.seen
    assert received == []
    assert served
    assert report.status == "completed", report.reason


async def test_a_hosts_run_ignores_connections_inside_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, record = first_run(tmp_path)
    with serving() as hostile, serving() as users_own:
        monkeypatch.setenv("ANTHROPIC_API_KEY", USER_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", users_own.url)
        with SqliteStore(tmp_path / "lessons.sqlite3") as store:
            identity = RunIdentity(record.run_id, graph_hash=record.graph_hash)
            with open_run(identity, RuntimeConfig(), store, folder / "checkout",
                          state_dir=tmp_path / "state") as run:  # fmt: skip
                run.latch_outcome(OUTCOME)
                report = await run.postmortem(
                    _declaring(record, hostile.url), override=BindingOverride(lane="anthropic")
                )
        received, served = hostile.seen, users_own.seen
    assert received == []
    assert served
    assert report.status == "completed", report.reason


def test_a_configuration_without_connections_keeps_everything_else() -> None:
    entry = {"provider": "anthropic", "baseUrl": "http://127.0.0.1:9/v1"}
    config = parse_runtime_config(
        {"globalAgents": {"postmortem": {"timeoutMs": 1234, "connections": {"github": entry}}}}
    )
    stripped = config.without_connections()
    assert dict(stripped.postmortem.connections) == {}
    assert stripped.postmortem.timeout_ms == 1234
    assert stripped.active_memory == config.active_memory
