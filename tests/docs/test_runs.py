"""docs/runs.md: the sample record, loading and writing, refusals of bad records, harness
sessions, and the evidence, on copies of the repository's fixture runs and sessions."""

from __future__ import annotations

import json
import os
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from active_memory.models.run_schema import shipped_schema
from active_memory.models.runs import load_run_record
from docs.conftest import FIXTURES, fixtures
from docs.pages import claim
from docs.scenes import Scene
from docs.transcript import run_python

PAGE = "docs/runs.md"
SAMPLE = claim(PAGE, "sample")
LOAD = claim(PAGE, "load")
BAD = claim(PAGE, "bad")
NOT_REGULAR = claim(PAGE, "not-regular")
UNKNOWN_FORMAT = claim(PAGE, "unknown-format")
NO_MODEL = claim(PAGE, "no-model")
SESSIONS_EVIDENCE = claim(PAGE, "sessions-evidence")
SESSIONS = claim(PAGE, "sessions")
BUILD = claim(PAGE, "build")
EVIDENCE = claim(PAGE, "evidence")
CLEAN = FIXTURES / "runs" / "clean-success"
PI_SESSION = "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl"


def test_the_sample_is_a_valid_run_record() -> None:
    jsonschema.validate(json.loads(SAMPLE.body), shipped_schema())


def test_loading_and_writing_round_trips_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(CLEAN, tmp_path / "runs" / "NAME")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    run_python(LOAD, namespace)
    record = namespace["record"]
    assert record.executions[0].ref == "exec:ex-implement-1"
    # What it wrote loads back equal, the transcripts read from their copies.
    again = load_run_record("elsewhere/NAME")
    moved = [e.model_copy(update={"transcript": None}) for e in again.executions]
    assert moved == [e.model_copy(update={"transcript": None}) for e in record.executions]
    assert again.model_copy(update={"executions": ()}) == record.model_copy(
        update={"executions": ()}
    )
    for copy, original in zip(again.executions, record.executions, strict=True):
        assert copy.transcript is not None
        assert original.transcript is not None
        assert copy.transcript.read_bytes() == original.transcript.read_bytes()


def _record(folder: Path, change: Any) -> None:
    shutil.copytree(CLEAN, folder)
    document = json.loads((folder / "run.json").read_text("utf-8"))
    change(document)
    (folder / "run.json").write_text(json.dumps(document), "utf-8")


@pytest.mark.slow
def test_bad_records_are_refused_naming_the_field(tmp_path: Path) -> None:
    """Slow: six commands, one process each (about 3 s on two cores)."""
    _record(tmp_path / "bad", lambda d: d["executions"][1].update(node="deploy"))
    _record(tmp_path / "bad-occurrence", lambda d: d["executions"][1].update(occurrence=0))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").symlink_to("/dev/zero")
    _record(tmp_path / "r3", lambda d: None)
    transcript = tmp_path / "r3" / json.loads((CLEAN / "run.json").read_text("utf-8"))[
        "executions"][0]["transcript"]  # fmt: skip
    transcript.unlink()
    os.mkfifo(transcript)
    (tmp_path / "notes.jsonl").write_text('{"event": "note", "token": "x"}\n', "utf-8")
    scene = Scene(tmp_path)
    scene.run(BAD)
    scene.run(NOT_REGULAR)
    scene.run(UNKNOWN_FORMAT)


def test_harness_sessions_read_as_records(tmp_path: Path) -> None:
    scene = Scene(
        fixtures(tmp_path, "claude", "codex"), aliases={"/tmp/s13.db": str(tmp_path / "s13.db")}
    )
    scene.run(NO_MODEL)
    scene.run(SESSIONS_EVIDENCE)


def test_sessions_lists_a_pi_session_in_its_home(tmp_path: Path) -> None:
    folder = tmp_path / "home" / ".pi" / "agent" / "sessions" / "--home-dev-order-service--"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "pi" / PI_SESSION, folder)
    # Written when the session ended, as a real one is, not when this test copied it.
    ended = datetime(2025, 12, 1, 14, 0, tzinfo=UTC).timestamp()
    os.utime(folder / PI_SESSION, (ended, ended))
    Scene(tmp_path, aliases={"/tmp/home": str(tmp_path / "home")}).run(SESSIONS)


def test_the_evidence_builder_example_builds_within_its_budget(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {
        "record": load_run_record(CLEAN),
        "run_dir": tmp_path,
        "cards": [],
        "changes": [],
        "token": threading.Event(),
    }
    run_python(BUILD, namespace)
    bundle = namespace["bundle"]
    assert len(bundle.serialized.encode()) <= 128 * 1024
    assert set(bundle.private_files) == {"graph", "runtime", "initial_input"}
    assert (tmp_path / "evidence").stat().st_mode & 0o777 == 0o700


def test_evidence_prints_the_summary_and_the_truncation_report(tmp_path: Path) -> None:
    Scene(fixtures(tmp_path, "runs/map-verbose-reviewer")).run(EVIDENCE)
