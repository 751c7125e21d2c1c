"""``specialist run --timeout-ms``: the session's deadline from the command line, as
``postmortem`` takes it, and a clear refusal of a value out of range."""

from __future__ import annotations

from pathlib import Path

from cli.authoring_kit import cli, demo_runs


def test_timeout_ms_sets_the_sessions_deadline(tmp_path: Path) -> None:
    first, _ = demo_runs(tmp_path)

    quick = cli("specialist", "run", "graph_discovery", first, "--provider", "replay",
                "--timeout-ms", "1")  # fmt: skip
    enough = cli("specialist", "run", "graph_discovery", first, "--provider", "replay",
                 "--timeout-ms", "60000")  # fmt: skip

    assert quick.exit_code != 0
    assert "error: the deadline passed while preparing" in quick.stderr
    assert enough.exit_code == 0, enough.stdout + enough.stderr
    assert "output caps  12288 tokens a turn investigating, 16384 answering" in enough.stdout


def test_a_timeout_out_of_range_is_refused_before_anything_runs(tmp_path: Path) -> None:
    result = cli("specialist", "run", "graph_discovery", tmp_path, "--timeout-ms", "0")

    assert result.exit_code == 2
    assert "--timeout-ms" in result.stderr
