"""A postmortem on the claude-code harness lane whose ``claude`` cannot run: the report keeps the
cause and the one sentence that fixes it, for every specialist with work to do."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from active_memory.postmortem.entry import run_postmortem, sequential_ids
from active_memory.postmortem.options import PostmortemOptions
from fake_claude import install_fake_claude
from postmortem.postmortem_kit import config_of, first_run, store_at

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("version", "cause", "fix"),
    [
        (None, "harness_missing", "install it with `npm install -g @anthropic-ai/claude-code`"),
        ("2.0.5 (Claude Code)", "harness_too_old", "update it with `claude update`"),
    ],
)
async def test_a_claude_that_cannot_run_is_the_reports_cause(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str | None,
    cause: str,
    fix: str,
) -> None:
    _, record = first_run(tmp_path)
    folder = tmp_path / "bin"
    if version is None:
        folder.mkdir()
    else:
        install_fake_claude(folder, [], version=version)
    git = shutil.which("git")
    assert git is not None
    monkeypatch.setenv("PATH", os.pathsep.join((str(folder), str(Path(git).parent))))
    if version is None:
        assert shutil.which("claude") is None, "a claude beside git: this test cannot hide it"
    with store_at(tmp_path) as store:
        options = PostmortemOptions(
            config=config_of(),
            backend=store,
            private_dir=tmp_path / "evidence",
            new_id=sequential_ids(),
        )
        report = await run_postmortem(record, options)
    assert report.status == "failed"
    assert report.lane == "claude-code"
    assert report.reason is not None
    assert fix in report.reason
    failed = [entry for entry in report.specialists if entry.status == "failed"]
    assert failed
    assert {entry.error_code for entry in failed} == {cause}
