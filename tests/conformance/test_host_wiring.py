"""Conformance: the real Claude Code CLI, wired by a host through ``run.harness_wiring``.

No ``hooks install``: the host writes the run's settings (a per-run ``http`` hook carrying the
token and the node, conversation and execution ids) to a private file and launches
``claude --settings FILE``. The card reaches the model, and the receipt and the delivery reach
the host's open run, under the host's ids. The run uses the suite's kit (stand-in, clean
environment, loopback check) and costs one short Claude Code run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from active_memory.host import open_run
from active_memory.models.config import RuntimeConfig
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from conformance.harnesses import HARNESSES, Harness, Installed, Invocation
from conformance.kit import TARGET, Workspace, record, run_harness
from conformance.stand_in import StandIn
from conformance.test_harnesses import _card_reached_the_model, _completed, _receipt

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(params=["claude"])
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


@dataclass(frozen=True, slots=True)
class _WithSettings:
    """The harness's own invocation plus ``--settings FILE``, as a host launches it."""

    harness: Harness
    settings: Path

    @property
    def name(self) -> str:
        return self.harness.name

    def invocation(self, binary: Path, project: Path, home: Path, url: str) -> Invocation:
        plain = self.harness.invocation(binary, project, home, url)
        return Invocation([*plain.argv, "--settings", str(self.settings)], plain.env)


def test_a_host_wired_claude_records_into_the_hosts_run(
    harness: Harness, installed: Installed, binary: Path, workspace: Workspace, stand_in: StandIn
) -> None:
    assert not (workspace.project / ".claude").exists()  # nothing installed in the project
    conversation = "host conversation/1"
    with (
        SqliteStore(workspace.store, read_only=True) as backend,
        open_run(RunIdentity("host-run"), RuntimeConfig(), backend, workspace.project) as run,
    ):
        wiring = run.harness_wiring("claude", "build", conversation, "execution-1")
        settings = wiring.write_settings(workspace.root / "host" / "claude-settings.json")
        launched = _WithSettings(harness, settings)
        ran = run_harness(launched, binary, workspace, stand_in, wiring.env, name="host")  # type: ignore[arg-type]
        after = _completed(ran, stand_in)
        _card_reached_the_model(
            workspace, stand_in, after, evidence=("claude-host-wired", installed.version)
        )
        _receipt(run.receipts, harness)
        delivered = [
            (d.lesson_id, d.conversation_id, d.node_id, d.channel, d.execution)
            for d in run.deliveries
        ]
    assert delivered == [(workspace.lesson.id, conversation, "build", "hook", "execution-1")]
    assert [r.execution for r in run.receipts if TARGET in r.paths] == ["execution-1"]
    record("claude-host-wired-manifest", {"deliveries": [str(d) for d in delivered]})
