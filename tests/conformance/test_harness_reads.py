"""Conformance: a specialist on the codex, copilot and pi harness lanes whose model reads a file
outside the checkout (beside the run folder), against the real CLIs and a scripted model on
loopback. Copilot CLI refuses the read itself; Codex's sandbox and pi's tools read any path, so
the host sees the read in the events and fails the session before its answer is admitted.
Claude Code's own refusal is in ``test_harness_lanes.py``.

Slow: it starts the pinned CLIs from the conformance kit (``harnesses.py``), each a real harness
session against the loopback model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from conformance.harnesses import HARNESSES, Harness, Installed
from conformance.openai_specialist import ScriptedOpenAISpecialist, openai_results, run_on
from conformance.stand_in import Recorded, ToolCall
from postmortem.postmortem_kit import first_run

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]

# A file beside the run folder, outside the checkout: no specialist may read it.
SECRET = "TOP-SECRET-OUTSIDE-THE-CHECKOUT"


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


_READ_OUTSIDE = {
    "codex": lambda secret, checkout: ToolCall(
        "exec_command", {"cmd": f"cat {secret}", "workdir": str(checkout)}
    ),
    "copilot": lambda secret, _checkout: ToolCall("view", {"path": str(secret)}),
    "pi": lambda secret, _checkout: ToolCall("read", {"path": str(secret)}),
}


@pytest.mark.parametrize("harness", ["codex", "pi"], indirect=True)
def test_a_read_outside_the_checkout_on_codex_or_pi_fails_the_session(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Codex's sandbox and pi's tools read any path: the host sees the read in the events and
    fails the session, so its answer is never admitted (the file did reach the model)."""
    result, requests = _read_outside(harness, binary, tmp_path, monkeypatch)
    assert result.exit_code == 1, result.stdout + result.stderr
    trial = json.loads(result.stdout)
    assert (trial["status"], trial["error_code"]) == ("failed", "read_outside_checkout")
    assert trial["answer"] is None
    assert any(SECRET in json.dumps(request.body) for request in requests)


@pytest.mark.parametrize("harness", ["copilot"], indirect=True)
def test_a_read_outside_the_checkout_is_refused_by_copilot_itself(
    harness: Harness,
    installed: Installed,
    binary: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Copilot CLI allows paths in its working directory and --add-dir folders only; another
    path needs a person's approval, which a non-interactive run cannot give."""
    result, requests = _read_outside(harness, binary, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["status"] == "accepted"
    [refused] = openai_results(requests[-1].body).values()
    assert "Permission denied" in refused
    assert all(SECRET not in json.dumps(request.body) for request in requests)


def _read_outside(
    harness: Harness, binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Result, list[Recorded]]:
    """A session whose model reads a file beside the run folder, outside the checkout."""
    folder, _ = first_run(tmp_path)
    checkout = (folder / "checkout").resolve()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    home = tmp_path / "home"
    home.mkdir()
    steps = [_READ_OUTSIDE[harness.name](secret, checkout)]
    with ScriptedOpenAISpecialist(harness.name, steps) as model:
        result = run_on(harness, binary, folder, home, model.url, monkeypatch)
        requests = [request for request in model.requests if request.reply.startswith("step")]
    return result, requests
