"""docs/postmortem.md: the demo, the host example, the report, the CLI transcripts."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from docs.compare import compare
from docs.conftest import DEMO_DIR, Demo, fixtures
from docs.pages import claim, output
from docs.transcript import run_transcript

PAGE = "docs/postmortem.md"
DEMO_OUTPUT = output(PAGE, "demo")


def test_the_demo_prints_what_the_page_shows(demo_made: Demo) -> None:
    compare(DEMO_OUTPUT, DEMO_OUTPUT.body, demo_made.printed)


HOST = claim(PAGE, "host")
HOST_RUN = claim(PAGE, "host-run")


@pytest.mark.slow
def test_the_host_example_runs_as_a_program_and_prints_what_the_page_shows(
    demo_made: Demo, tmp_path: Path
) -> None:
    """Slow: a replayed postmortem in a Python process of its own (about 4 s)."""
    assert "run.hook_env(" in HOST.body  # safe inside asyncio.run, which the example uses
    (tmp_path / "host_example.py").write_text(HOST.body, "utf-8")
    make = "active-memory demo --dir am-demo > /dev/null    # the checkout and recording used above"
    copy = partial(shutil.copytree, demo_made.folder, tmp_path / "am-demo")
    run_transcript(HOST_RUN, tmp_path, prepared={make: copy}, new_ids=True)


REPORT = claim(PAGE, "report")
RUN_LOG = claim(PAGE, "run-log")
FIXTURE_DRY_RUN = claim(PAGE, "fixture-dry-run")
DEMO_DRY_RUN = claim(PAGE, "demo-dry-run")
SPECIALIST_RUN = claim(PAGE, "specialist-run")
CONTRACTS_CHECK = claim(PAGE, "contracts-check")


def test_the_report_and_the_run_log_show_what_the_page_shows(demo: Path, tmp_path: Path) -> None:
    aliases = {DEMO_DIR: str(demo)}
    run_transcript(REPORT, tmp_path, aliases=aliases)
    run_transcript(RUN_LOG, tmp_path, aliases=aliases, new_ids=True)  # the same folder's log


def test_a_dry_run_on_the_fixture_folder_notes_the_skipped_specialists(tmp_path: Path) -> None:
    run_transcript(FIXTURE_DRY_RUN, fixtures(tmp_path, "runs/retry-and-review"), new_ids=True)


def test_a_dry_run_on_the_demo_checkout_prints_what_the_page_shows(
    demo: Path, tmp_path: Path
) -> None:
    run_transcript(DEMO_DRY_RUN, tmp_path, aliases={DEMO_DIR: str(demo)}, new_ids=True)


def test_specialist_run_prints_the_session_and_its_admission(demo: Path, tmp_path: Path) -> None:
    run_transcript(SPECIALIST_RUN, tmp_path, aliases={DEMO_DIR: str(demo)})


def test_contracts_check_lists_every_shipped_contract(tmp_path: Path) -> None:
    run_transcript(CONTRACTS_CHECK, tmp_path)
