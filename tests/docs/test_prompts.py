"""docs/prompts.md: rendering a prompt, and the worked example that edits one and evaluates it
(the demo's runs, a strict replay, the loopback stand-in model), then contracts and run logs."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from active_memory.data_folders import shipped_folder
from docs.compare import compare
from docs.conftest import Demo
from docs.pages import claim, output
from docs.transcript import run_python, run_transcript

PAGE = "docs/prompts.md"
RENDER = claim(PAGE, "render")
RENDER_OUTPUT = output(PAGE, "render")
COPY = claim(PAGE, "copy")
EVALUATE = claim(PAGE, "evaluate")
CONTRACTS = claim(PAGE, "contracts")
SHOWN_ADDRESS = "127.0.0.1:8089"  # the page's `--port 8089`; the test takes any free port
SHOWN_PACKAGE = ".venv/lib/python3.12/site-packages/active_memory"  # wherever it is installed


def test_the_rendering_example_prints_what_the_page_shows() -> None:
    printed = run_python(RENDER)
    compare(RENDER_OUTPUT, RENDER_OUTPUT.body, printed)


def test_a_copy_of_the_prompts_folder_is_made_with_cp_and_the_wrong_folder_is_named(
    tmp_path: Path,
) -> None:
    package = Path(str(shipped_folder("prompts"))).parent
    run_transcript(COPY, tmp_path, aliases={SHOWN_PACKAGE: str(package)})


@pytest.mark.slow
def test_the_worked_example_edits_a_prompt_and_evaluates_it(
    demo_made: Demo, stand_in: str, tmp_path: Path
) -> None:
    """Slow: eighteen commands, four of them replayed sessions and two replayed postmortems
    (about 15 s on two cores)."""
    make = "active-memory demo --dir demo > /dev/null"
    copy = partial(shutil.copytree, demo_made.folder, tmp_path / "demo")
    aliases = {SHOWN_ADDRESS: stand_in}
    run_transcript(EVALUATE, tmp_path, aliases=aliases, prepared={make: copy})
    run_transcript(CONTRACTS, tmp_path, aliases=aliases)  # "from the same folder"
