"""Prompts laid out for prefix caching: what is the same on every run comes first.

A provider's prompt cache serves the longest prefix a request shares with an earlier one. The
system prompt holds instructions and contract only, so two different runs send the same system
prompt byte for byte, and every specialist's begins with the same preamble; the run's material
(run id, payload parts, evidence files, tool roots, host facts, evidence) opens the first
message, after it. Rendered live, through ``specialist prompt``, for the demo's two runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from active_memory.agents.prompts import SPECIALISTS, system_prompt
from cli.authoring_kit import cli, demo_runs

# The system prompts of two different runs are identical and at least this long: the smallest
# specialist prompt (graph_discovery: preamble, role, contract) is about 13.5 kB.
SHARED_ACROSS_RUNS_BYTES = 13_000
# Every specialist's system prompt opens with the same preamble, about 6 kB.
SHARED_ACROSS_SPECIALISTS_BYTES = 6_000


def _shown(run: Path, specialist: str, store: Path) -> dict[str, str]:
    result = cli("specialist", "prompt", specialist, run, "--json", "--store", store)
    assert result.exit_code == 0, result.stderr
    shown: dict[str, str] = json.loads(result.stdout)
    return shown


def _common_bytes(*texts: str) -> int:
    """How many leading bytes all ``texts`` share."""
    encoded = [text.encode("utf-8") for text in texts]
    shortest = min(len(data) for data in encoded)
    for index in range(shortest):
        if len({data[index] for data in encoded}) > 1:
            return index
    return shortest


@pytest.mark.parametrize("specialist", ["graph_discovery", "repository_discovery"])
def test_two_runs_send_the_same_system_prompt_and_differ_only_after_it(
    tmp_path: Path, specialist: str
) -> None:
    first, second = demo_runs(tmp_path)
    one = _shown(first, specialist, tmp_path / "one.sqlite3")
    two = _shown(second, specialist, tmp_path / "two.sqlite3")

    assert _common_bytes(one["system"], two["system"]) >= SHARED_ACROSS_RUNS_BYTES
    assert one["system"] == two["system"]
    # The run's material comes after the stable part: the first message names its own run.
    assert one["prompt"].startswith("Review run `run-20250601-retry-and-review` as the ")
    assert two["prompt"].startswith("Review run `run-20250601-clean-success` as the ")
    assert "run-2025" not in one["system"]


def test_every_specialist_system_prompt_opens_with_the_same_preamble() -> None:
    prompts = [system_prompt(name, contract="{}") for name in SPECIALISTS]

    assert _common_bytes(*prompts) >= SHARED_ACROSS_SPECIALISTS_BYTES
