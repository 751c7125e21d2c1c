"""Conformance: the real harness CLIs, wired by a host through ``run.harness_wiring``.

Slow: every test starts a real harness CLI (a Node.js program of its own).

No ``hooks install``: the host puts the run's wiring where the CLI it launches reads it, as
docs/recall.md ("Wiring a harness from a host") shows:

* Claude Code: the settings (a per-run ``http`` hook carrying the token and the node,
  conversation and execution ids) in a private file, ``claude --settings FILE``;
* Codex: the hook document as ``$CODEX_HOME/hooks.json``, the run's env;
* Copilot CLI: the hook document in ``$COPILOT_HOME/hooks/``, the run's env;
* pi: ``pi -e <extension>``, the run's env.

The card reaches the model, and the receipt and the delivery reach the host's open run under
the host's ids. The runs use the suite's kit (stand-in, clean environment, loopback check);
each is one short CLI run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from active_memory.host import HarnessWiring, open_run
from active_memory.models.config import RuntimeConfig
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from conformance.harnesses import HARNESSES, Harness, Installed, Invocation
from conformance.kit import TARGET, Workspace, record, run_harness
from conformance.stand_in import StandIn
from conformance.test_harnesses import _card_reached_the_model, _completed, _receipt

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


@dataclass(frozen=True, slots=True)
class _Wired:
    """The harness's own invocation with the run's wiring put where the CLI reads it."""

    harness: Harness
    wiring: HarnessWiring
    scratch: Path

    @property
    def name(self) -> str:
        return self.harness.name

    def invocation(self, binary: Path, project: Path, home: Path, url: str) -> Invocation:
        plain = self.harness.invocation(binary, project, home, url)
        argv, wiring = list(plain.argv), self.wiring
        if self.name == "claude":
            argv += ["--settings", str(wiring.write_settings(self.scratch / "claude.json"))]
        elif self.name == "codex":
            wiring.write_settings(Path(plain.env["CODEX_HOME"]) / "hooks.json")
        elif self.name == "copilot":
            wiring.write_settings(Path(plain.env["COPILOT_HOME"]) / "hooks" / "run.json")
        else:
            argv[1:1] = wiring.args
        return Invocation(argv, plain.env)


def test_a_host_wired_cli_records_into_the_hosts_run(
    harness: Harness, installed: Installed, binary: Path, workspace: Workspace, stand_in: StandIn
) -> None:
    for folder in (".claude", ".codex", ".github", ".pi"):
        assert not (workspace.project / folder).exists()  # nothing installed in the project
    conversation = "host conversation/1"
    with (
        SqliteStore(workspace.store, read_only=True) as backend,
        open_run(RunIdentity("host-run"), RuntimeConfig(), backend, workspace.project) as run,
    ):
        wiring = run.harness_wiring(harness.name, "build", conversation, "execution-1")
        launched = _Wired(harness, wiring, workspace.root / "host")
        ran = run_harness(launched, binary, workspace, stand_in, wiring.env, name="host")  # type: ignore[arg-type]
        after = _completed(ran, stand_in)
        evidence = (f"{harness.name}-host-wired", installed.version)
        _card_reached_the_model(workspace, stand_in, after, evidence=evidence)
        _receipt(run.receipts, harness)
        delivered = [
            (d.lesson_id, d.conversation_id, d.node_id, d.channel, d.execution)
            for d in run.deliveries
        ]
    assert delivered == [(workspace.lesson.id, conversation, "build", "hook", "execution-1")]
    assert [r.execution for r in run.receipts if TARGET in r.paths] == ["execution-1"]
    record(f"{harness.name}-host-wired-manifest", {"deliveries": json.dumps(delivered)})
