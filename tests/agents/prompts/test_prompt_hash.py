"""Prompt hashes identify the shipped prompt of each specialist for reports."""

from __future__ import annotations

import re

import pytest

from active_memory.agents import prompts
from active_memory.agents.prompts import SPECIALISTS, prompt_sha256


def test_prompt_hash_is_stable_across_two_loads() -> None:
    first = {s: prompt_sha256(s) for s in SPECIALISTS}
    prompts._load.cache_clear()
    second = {s: prompt_sha256(s) for s in SPECIALISTS}

    assert first == second


def test_prompt_hashes_differ_between_specialists() -> None:
    hashes = [prompt_sha256(s) for s in SPECIALISTS]

    assert len(set(hashes)) == len(SPECIALISTS)
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes)


def test_prompt_hash_covers_the_card_limits_the_prompt_teaches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = prompt_sha256("repository_discovery")
    changed = {**prompts.LIMIT_VALUES, "title_bytes": "200"}
    monkeypatch.setattr(prompts, "LIMIT_VALUES", changed)

    assert prompt_sha256("repository_discovery") != before


def test_prompt_hash_ignores_run_values() -> None:
    before = prompt_sha256("graph_discovery")
    prompts.system_prompt("graph_discovery", contract="{}")
    prompts.run_material(
        run_id="run-a",
        specialist="graph_discovery",
        payload="  `executions`.",
        evidence_files="- graph.json",
        tool_roots="`evidence`",
    )

    assert prompt_sha256("graph_discovery") == before


def test_prompt_hash_covers_the_run_material_template(monkeypatch: pytest.MonkeyPatch) -> None:
    before = prompt_sha256("graph_discovery")
    shipped = prompts.load_prompt

    def edited(name: str) -> str:
        text = shipped(name)
        return text + "\nOne more line.\n" if name == prompts.RUN_MATERIAL else text

    monkeypatch.setattr(prompts, "load_prompt", edited)

    assert prompt_sha256("graph_discovery") != before
