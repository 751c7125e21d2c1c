"""The harness table: every row has its adapters, every reader follows the rows, and the hook
helper's own copy of the names matches them."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from active_memory.errors import RecallError
from active_memory.evidence.sources import session_loader
from active_memory.harnesses import HARNESS_NAMES, HARNESSES, HarnessRow, harness_row
from active_memory.hooks import helper
from active_memory.hooks.base import Harness
from active_memory.hooks.dispatch import harness_adapter
from active_memory.hooks.install import _hook_file, target_path
from active_memory.host_wiring import harness_wiring


def missing_adapters(rows: tuple[HarnessRow, ...]) -> list[str]:
    """The adapter modules the rows name that do not exist or do not say what the table needs:
    ``hooks/<name>.py`` with ``HARNESS`` for that name, ``evidence/sources/<source_module>.py``
    with ``LOADER``, ``PEEK`` (the inventory's look at one line) and the row's lane as
    ``NODE_ID``."""
    missing = []
    for row in rows:
        hooks = _module(f"active_memory.hooks.{row.name}")
        adapter = getattr(hooks, "HARNESS", None)
        if not (isinstance(adapter, Harness) and adapter.name == row.name):
            missing.append(f"hooks/{row.name}.py")
        source = _module(f"active_memory.evidence.sources.{row.source_module}")
        if not (
            callable(getattr(source, "LOADER", None))
            and callable(getattr(source, "PEEK", None))
            and row.lane == source.NODE_ID
        ):
            missing.append(f"evidence/sources/{row.source_module}.py")
    return missing


def _module(name: str) -> object:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        return None


def _row(name: str, **changes: object) -> HarnessRow:
    given: dict[str, object] = {
        "home_variable": "NOVA_HOME", "home": ".nova", "sessions": "sessions",
        "session_files": ("*.jsonl",), "conversation_records": ("message",),
        "tool_event": "beforeTool", "lane": name,
    }  # fmt: skip
    return HarnessRow(name, name.title(), **{**given, **changes})  # type: ignore[arg-type]


def test_every_row_has_its_hook_and_session_adapters() -> None:
    assert missing_adapters(HARNESSES) == []
    assert [getattr(harness_adapter(name), "name", None) for name in HARNESS_NAMES] == list(
        HARNESS_NAMES
    )
    for row in HARNESSES:
        module = importlib.import_module(f"active_memory.evidence.sources.{row.source_module}")
        assert session_loader(row.name) is module.LOADER


def test_a_row_without_adapters_is_reported() -> None:
    assert missing_adapters((_row("nova"),)) == ["hooks/nova.py", "evidence/sources/nova.py"]
    # Adapters that exist but belong to another row count as missing too.
    assert missing_adapters((_row("pi", source_module="codex"),)) == ["evidence/sources/codex.py"]


def test_every_row_can_be_installed_and_wired(tmp_path: Path) -> None:
    for row in HARNESSES:
        project = target_path(row.name, project=tmp_path, home=tmp_path / "home")
        user = target_path(row.name, project=None, home=tmp_path / "home", environ={})
        assert project.is_relative_to(tmp_path)
        assert user.is_relative_to(tmp_path / "home" / row.home)
        wiring = harness_wiring(row.name, {}, url="http://127.0.0.1:1/hook", token="t", ids={})
        assert wiring.harness == row.name
        assert wiring.settings is None or row.tool_event in wiring.settings["hooks"]


def test_a_row_without_an_installer_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(RecallError, match="does not know where Nova reads hooks yet"):
        _hook_file(_row("nova"), None, tmp_path, {})


def test_the_hook_helper_keeps_the_tables_names_and_answer_shapes() -> None:
    # The helper runs as a script without the package: its copy must match the table.
    assert helper.HARNESSES == HARNESS_NAMES
    assert set(HARNESS_NAMES) >= helper._NESTED
    assert {harness_row(name).tool_event for name in helper._NESTED} == {helper._EVENT}


def test_a_row_is_frozen_and_an_unknown_name_says_which_are_known() -> None:
    row = harness_row("claude")
    with pytest.raises(AttributeError, match="frozen"):
        row.lane = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del row.lane
    with pytest.raises(KeyError, match="unknown harness 'cursor'; known: claude, codex, copilot"):
        harness_row("cursor")


def test_each_row_says_where_its_sessions_are_and_its_own_variable() -> None:
    claude = harness_row("claude")
    assert (claude.shown_home, claude.sessions, claude.override_variable) == (
        "~/.claude", "projects", "ACTIVE_MEMORY_CLAUDE_DIR")  # fmt: skip
    assert len(set(HARNESS_NAMES)) == len(HARNESS_NAMES)
    assert len({row.lane for row in HARNESSES}) == len(HARNESSES)
