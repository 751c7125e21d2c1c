"""The console script runs start-up with the cyclic collector off and turns it back on once the
command to run is resolved (``cli/entry.py``)."""

from __future__ import annotations

import gc
from pathlib import Path

from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from start_probe import probe

_RUN = """
import contextlib, gc, io, json, runpy, sys
from active_memory.cli import entry, lazy
seen = []
resolved = lazy.end_start_up
def spy():
    seen.append(gc.isenabled())
    resolved()
    seen.append(gc.isenabled())
lazy.end_start_up = spy
sys.argv = ['active-memory', *ARGV]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \\
        contextlib.suppress(SystemExit):
    START
print(json.dumps([seen, gc.isenabled(), gc.get_freeze_count()]))
"""


def _run(argv: list[str], start: str = "entry.run()") -> object:
    return probe(_RUN.replace("ARGV", repr(argv)).replace("START", start))


def test_a_command_runs_with_the_collector_on_after_a_start_up_without_it(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    # lessons (a lazy group) resolves nothing to run; its list command ends start-up, once.
    assert _run(["lessons", "list", "--store", store]) == [[False, True], True, 0]


def test_python_dash_m_starts_the_command_line_as_the_console_script_does(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    started = _run(
        ["lessons", "list", "--store", store],
        "runpy.run_module('active_memory.cli.main', run_name='__main__')",
    )
    assert started == [[False, True], True, 0]


def test_a_command_line_that_runs_no_command_turns_the_collector_back_on() -> None:
    assert _run(["--help"]) == [[], True, 0]
    assert _run(["no-such-command"]) == [[], True, 0]


def test_the_command_line_run_in_a_callers_process_leaves_its_collector_alone(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    SqliteStore(store).close()
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        assert run_cli(["lessons", "list", "--store", store]).exit_code == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert run_cli(["lessons", "list", "--store", store]).exit_code == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
