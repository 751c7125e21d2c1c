"""docs/ui.md: the ledger on the demo's store, from the CLI and in Python, and the browser's
start."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs.compare import compare
from docs.conftest import DEMO_DIR
from docs.pages import claim, output
from docs.transcript import run_python, run_servers, run_transcript

PAGE = "docs/ui.md"
STATS = claim(PAGE, "stats")
LEDGER = claim(PAGE, "ledger")
LEDGER_OUTPUT = output(PAGE, "ledger")
UI = claim(PAGE, "ui")


def test_lessons_stats_counts_what_the_demo_recorded(demo: Path, tmp_path: Path) -> None:
    run_transcript(STATS, tmp_path, aliases={DEMO_DIR: str(demo)})


def test_the_ledger_example_runs_and_prints_what_the_page_shows(demo: Path) -> None:
    printed = run_python(LEDGER, aliases={DEMO_DIR: str(demo)})
    compare(LEDGER_OUTPUT, LEDGER_OUTPUT.body, printed)


def test_ui_prints_a_one_time_login_link_on_a_loopback_port(demo: Path, tmp_path: Path) -> None:
    pytest.importorskip("jinja2", reason="the ui extra is not installed")
    run_servers(UI, tmp_path, aliases={DEMO_DIR: str(demo)})
