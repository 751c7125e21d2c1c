"""The discovery prompts describe `existing_lessons` as the evidence builder emits it: the
entries carry no recommendation, so a prompt must not ask the model to judge coverage from it."""

from __future__ import annotations

import pytest

from active_memory.data_folders import shipped_folder
from active_memory.evidence.builder import _existing
from active_memory.evidence.truncation import CutLog


def _prompt(name: str) -> str:
    text = shipped_folder("prompts").joinpath(f"{name}.md").read_text()
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("specialist", "scope", "fields"),
    [
        ("graph_discovery", {"kind": "graph", "node_id": "implement"}, {"id", "title", "node_id"}),
        ("repository_discovery", {"kind": "repository", "files": ["a/b.py"]},
         {"id", "title", "files", "folders", "identifiers", "keyword_groups"}),
    ],
)  # fmt: skip
def test_the_prompt_says_what_an_existing_lesson_entry_holds(
    specialist: str, scope: dict[str, object], fields: set[str]
) -> None:
    lesson = {"id": "lesson-1", "title": "T", "recommendation": "R", "scope": scope}
    [entry] = _existing([lesson], CutLog())
    assert set(entry) == fields
    prompt = _prompt(specialist)
    assert "id, title and" in prompt
    assert "not its recommendation" in prompt or "not the recommendation" in prompt
