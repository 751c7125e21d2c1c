"""The console script runs start-up with the cyclic collector off and turns it back on, with
start-up's objects frozen, once the command to run is resolved (``cli/entry.py``)."""

from __future__ import annotations

import gc
from pathlib import Path

from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from start_probe import probe

_RUN = """
import contextlib, gc, io, json, sys
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
    entry.run()
print(json.dumps([seen, gc.isenabled(), gc.get_freeze_count() > 0]))
"""


def _run(argv: list[str]) -> object:
    return probe(_RUN.replace("ARGV", repr(argv)))


def test_a_command_runs_with_the_collector_on_after_a_start_up_without_it(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "lessons.sqlite3")
    # lessons (a lazy group) resolves nothing to run; its list command ends start-up, once.
    assert _run(["lessons", "list", "--store", store]) == [[False, True], True, True]


def test_a_command_line_that_runs_no_command_turns_the_collector_back_on() -> None:
    assert _run(["--help"]) == [[], True, True]
    assert _run(["no-such-command"]) == [[], True, True]


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
