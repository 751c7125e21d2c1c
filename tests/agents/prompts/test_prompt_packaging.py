"""The Markdown prompts ship as package data."""

from __future__ import annotations

import zipfile
from importlib import resources
from pathlib import Path

from hatchling.builders.wheel import WheelBuilder

from active_memory.agents.prompts import PROMPT_NAMES

ROOT = Path(__file__).resolve().parents[3]


def test_importlib_resources_finds_every_prompt() -> None:
    package = resources.files("active_memory.agents.prompts")
    for name in PROMPT_NAMES:
        assert package.joinpath(f"{name}.md").is_file(), name


def test_built_wheel_contains_every_prompt(tmp_path: Path) -> None:
    [wheel] = list(WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"]))

    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        shipped = {
            name: archive.read(f"active_memory/agents/prompts/{name}.md") for name in PROMPT_NAMES
        }

    for name in PROMPT_NAMES:
        assert f"active_memory/agents/prompts/{name}.md" in names
        local = resources.files("active_memory.agents.prompts").joinpath(f"{name}.md").read_bytes()
        assert shipped[name] == local
