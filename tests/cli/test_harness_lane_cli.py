"""The claude-code harness lane on the command line: inherited from a Claude Code run or forced
with ``--lane claude-code``; a missing ``claude`` is one sentence and exit 2, and a postmortem
report keeps the cause of a harness that cannot run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.models.runs import load_run_record
from cli_runner import run_cli
from fake_claude import install_fake_claude, logged_out, success
from fake_codex import install_fake_codex, success as codex_success
from postmortem.postmortem_kit import first_run

pytestmark = pytest.mark.timeout(90)

MISSING = (
    "error: the claude-code lane runs specialists with Claude Code's `claude` command, which is "
    "not on PATH: install it with `npm install -g @anthropic-ai/claude-code` (or choose an API "
    "lane with --lane)\n"
)


def _cli(*args: str) -> Result:
    return run_cli(list(args))


def _without_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-claude"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.mark.parametrize("forced", [(), ("--lane", "claude-code")])
def test_specialist_run_without_claude_on_path_is_one_sentence_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced: tuple[str, ...]
) -> None:
    folder, record = first_run(tmp_path)
    assert record.graph.nodes[0].binding is not None
    assert record.graph.nodes[0].binding.lane == "claude-code"  # inherited without --lane
    _without_claude(tmp_path, monkeypatch)
    result = _cli("specialist", "run", "graph_discovery", str(folder), *forced,
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr == MISSING


def test_specialist_run_on_the_codex_lane_without_codex_on_path_is_one_sentence_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = first_run(tmp_path)
    _without_claude(tmp_path, monkeypatch)
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "codex",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr == (
        "error: the codex lane runs specialists with Codex's `codex` command, which is not on "
        "PATH: install it with `npm install -g @openai/codex` (or choose an API lane with "
        "--lane)\n"
    )


def test_specialist_run_on_the_codex_lane_prints_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = first_run(tmp_path)
    reply = codex_success({"lessons": []}, commands=[("cat README.md", 0)])
    fake = install_fake_codex(tmp_path / "bin", [reply])
    monkeypatch.setenv("PATH", fake.path)
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "codex",
                  "--model", "gpt-5.1-codex", "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    out = result.stdout
    assert "model        openai/codex gpt-5.1-codex\n" in out
    assert "session      1 turn(s), 1 tool call(s), tokens 5900/120, 0 retries, no repair" in out
    assert "validation   accepted: 0 item(s) accepted, 0 rejected" in out
    [call] = fake.calls()
    assert call["cwd"] == str((folder / "checkout").resolve())


def test_a_connection_option_beside_the_harness_lane_is_refused(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "claude-code",
                  "--base-url", "http://127.0.0.1:9",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr == (
        "error: lane: --lane claude-code runs the specialists on the harness's own login; drop "
        "--base-url (they choose an API lane's server)\n"
    )


def test_specialist_run_on_the_harness_lane_prints_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = first_run(tmp_path)
    readme = folder / "checkout" / "README.md"
    fake = install_fake_claude(tmp_path / "bin", [success({"lessons": []}, reads=[str(readme)])])
    monkeypatch.setenv("PATH", fake.path)
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "claude-code",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    out = result.stdout
    assert "model        anthropic/claude-code claude-sonnet-4-5\n" in out
    assert "session      1 turn(s), 1 tool call(s), tokens 5900/120, 0 retries, no repair" in out
    assert "validation   accepted: 0 item(s) accepted, 0 rejected" in out
    [call] = fake.calls()
    assert call["cwd"] == str((folder / "checkout").resolve())


def test_the_postmortem_report_keeps_why_the_harness_could_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = first_run(tmp_path)
    assert load_run_record(folder).outcome is not None
    fake = install_fake_claude(tmp_path / "bin", [logged_out()])
    monkeypatch.setenv("PATH", fake.path)
    result = _cli("postmortem", str(folder), "--dry-run", "--json",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    failed = {
        entry["specialist"]: (entry["error_code"], entry["error"])
        for entry in report["specialists"]
        if entry["status"] == "failed"
    }
    assert set(failed) == {"graph_discovery", "repository_discovery"}  # maintenance: no lessons
    for code, error in failed.values():
        assert code == "harness_logged_out"
        assert error == (
            "Claude Code is not logged in, so the claude-code lane cannot run: run "
            "`claude auth login` and try again"
        )
