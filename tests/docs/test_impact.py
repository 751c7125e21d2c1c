"""docs/impact.md: `lessons impact` and the Python example on the demo's store and runs."""

from __future__ import annotations

from pathlib import Path

from docs.compare import compare
from docs.conftest import DEMO_DIR
from docs.pages import claim, output
from docs.transcript import run_python, run_transcript

PAGE = "docs/impact.md"
IMPACT = claim(PAGE, "impact")
IMPORTED = claim(PAGE, "impact-import")
NO_RUNS = claim(PAGE, "no-runs")
PYTHON = claim(PAGE, "python")
PYTHON_OUTPUT = output(PAGE, "python")


def test_lessons_impact_prints_what_the_page_shows(demo: Path, tmp_path: Path) -> None:
    run_transcript(IMPACT, tmp_path, aliases={DEMO_DIR: str(demo)})


def test_lessons_impact_on_an_imported_store_prints_what_the_page_shows(
    demo: Path, tmp_path: Path
) -> None:
    run_transcript(IMPORTED, tmp_path, aliases={DEMO_DIR: str(demo)})


def test_a_runs_folder_without_runs_is_refused_as_the_page_shows(
    demo: Path, tmp_path: Path
) -> None:
    run_transcript(NO_RUNS, tmp_path, aliases={DEMO_DIR: str(demo)})


def test_the_python_example_prints_what_the_page_shows(demo: Path) -> None:
    printed = run_python(PYTHON, aliases={DEMO_DIR: str(demo)})
    compare(PYTHON_OUTPUT, PYTHON_OUTPUT.body, printed)
