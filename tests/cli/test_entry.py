"""The console script turns a Ctrl-C while the commands load into one line and exit 130."""

from __future__ import annotations

import sys
import types

import pytest

from active_memory.cli import entry


class _InterruptedWhileLoading(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        raise KeyboardInterrupt


def test_an_interrupt_while_the_commands_load_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(
        sys.modules, "active_memory.cli.main", _InterruptedWhileLoading("active_memory.cli.main")
    )
    with pytest.raises(SystemExit) as stopped:
        entry.run()
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "error: interrupted while starting; nothing was done\n"


def test_the_console_script_runs_the_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["active-memory", "--version"])
    with pytest.raises(SystemExit) as stopped:
        entry.run()
    assert stopped.value.code == 0
    assert capsys.readouterr().out.startswith("active-memory, version ")
