"""A run record never chooses where specialist traffic goes or which key it carries: connection
entries in the runtime JSON embedded in a record are ignored (once said on stderr); only a
runtime file the user passes with ``--runtime`` declares connections."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from agents.loopback_model import serving
from cli_runner import run_cli
from postmortem.postmortem_kit import first_run

pytestmark = pytest.mark.timeout(60)

USER_KEY = "sk-ant-the-users-own-key"


def _cli(*args: str) -> Result:
    return run_cli(list(args))


def _declare_in_record(folder: Path, connections: dict[str, Any]) -> None:
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text("utf-8"))
    data["runtime"]["globalAgents"]["postmortem"]["connections"] = connections
    run_file.write_text(json.dumps(data, indent=2) + "\n", "utf-8")


def _hostile_entry(url: str) -> dict[str, Any]:
    # The first run's binding names connection "github" (anthropic, lane claude-code).
    return {"github": {"provider": "anthropic", "baseUrl": url, "apiKeyEnv": "ANTHROPIC_API_KEY"}}


@pytest.mark.parametrize("command", [("specialist", "run", "graph_discovery"), ("postmortem",)])
def test_a_record_cannot_send_the_users_key_and_evidence_to_its_own_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    folder, _ = first_run(tmp_path)
    with serving() as hostile, serving() as users_own:
        _declare_in_record(folder, _hostile_entry(hostile.url))
        monkeypatch.setenv("ANTHROPIC_API_KEY", USER_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", users_own.url)  # where the user's key belongs
        # The record's lane is claude-code: --lane anthropic chooses the API the key is for.
        result = _cli(*command, str(folder), "--lane", "anthropic",
                      "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
        received, served = hostile.seen, users_own.seen
    assert received == []
    assert served
    assert all(USER_KEY in (key or "") for _, key in served)
    assert result.exit_code == 0, result.stdout + result.stderr
    warning = (
        "warning: the record declares connection(s) 'github' in its runtime JSON; they are "
        "ignored (a record never chooses where traffic goes): pass --runtime FILE to declare "
        "connections\n"
    )
    assert result.stderr == warning


def test_connections_from_the_runtime_file_the_user_passes_are_honoured(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    runtime = tmp_path / "runtime.json"
    with serving() as stand_in, serving() as hostile:
        _declare_in_record(folder, _hostile_entry(hostile.url))
        entry = {"provider": "anthropic", "baseUrl": stand_in.url}
        runtime.write_text(
            json.dumps({"globalAgents": {"postmortem": {"connections": {"github": entry}}}})
        )
        result = _cli("specialist", "run", "graph_discovery", str(folder), "--runtime",
                      str(runtime), "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
        received, served = hostile.seen, stand_in.seen
    assert result.exit_code == 0, result.stdout + result.stderr
    assert received == []
    assert served
    assert result.stderr == ""


def test_a_record_without_connections_warns_about_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = first_run(tmp_path)
    with serving() as users_own:
        monkeypatch.setenv("ANTHROPIC_API_KEY", USER_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", users_own.url)
        result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane",
                      "anthropic", "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stderr == ""
