"""Property-based fuzzing of the session-file readers (Claude Code, Codex, pi, Copilot CLI).

Real-format fixture sessions are mutated (a line replaced by hostile bytes, one value of a
line's JSON replaced, a line cut or spliced, the file cut, lines dropped or repeated) and read
two ways: ``open_run_source`` gives a record or one :class:`RunRecordError` sentence, and the
``evidence`` CLI exits 0 or 2 with no traceback. Nothing else may escape.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from active_memory.errors import RunRecordError
from active_memory.evidence.sources import open_run_source
from cli_runner import run_cli
from hostile import hostile_bytes, one_sentence_or_success, planted

pytestmark = pytest.mark.timeout(900)
FIXTURES = Path(__file__).parents[2] / "fixtures"
# (harness, fixture folder copied whole, the session file inside it)
SESSIONS = (
    ("claude", "claude", "inline-sidechain.jsonl"),
    ("claude", "claude", "subagent-files.jsonl"),
    ("codex", "codex", "rollout-2025-07-14T10-00-00-legacy.jsonl"),
    ("codex", "codex", "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"),
    ("pi", "pi", "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl"),
    ("copilot", "copilot", "session-state/3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47/events.jsonl"),
)
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@st.composite
def mutated_session(draw: st.DrawFn) -> tuple[str, str, str, bytes]:
    """A fixture session with one mutation, and whether the harness is named or detected."""
    harness, folder, name = draw(st.sampled_from(SESSIONS))
    lines = (FIXTURES / folder / name).read_bytes().splitlines(keepends=True)
    index = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["replace", "plant", "cut", "splice", "truncate", "reorder"]))
    if how == "replace":
        lines[index] = draw(hostile_bytes()) + b"\n"
    elif how == "plant":
        lines[index] = draw(planted(json.loads(lines[index]))) + b"\n"
    elif how == "cut":
        lines[index] = lines[index][: draw(st.integers(0, len(lines[index])))]
    elif how == "splice":
        at = draw(st.integers(0, len(lines[index])))
        lines[index] = (
            lines[index][:at] + draw(st.binary(min_size=1, max_size=8)) + lines[index][at:]
        )
    elif how == "reorder":
        lines = draw(st.lists(st.sampled_from(lines), max_size=len(lines) * 2))
    data = b"".join(lines)
    if how == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    named = draw(st.sampled_from([harness, "detect"]))
    return folder, name, named, data


Session = Callable[[str, str, bytes], Path]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """Writes an example's session file into a copy of its fixture folder, and gives its path.

    The folder is copied once per session file, not once per example (a copy cost about a
    millisecond, over a thousand examples): a mutation changes the session file alone, which
    every example rewrites whole, and the readers never write beside a session, so the other
    files of the copy stay as copied. Each session file has a copy of its own, so a sibling
    read with it (a subagent's file) is never another example's mutation."""
    copies: dict[tuple[str, str], Path] = {}

    def write(folder: str, name: str, data: bytes) -> Path:
        root = copies.get((folder, name))
        if root is None:
            root = tmp_path_factory.mktemp("sessions")
            shutil.copytree(FIXTURES / folder, root, dirs_exist_ok=True)
            copies[(folder, name)] = root
        path = root / name
        path.write_bytes(data)
        return path

    return write


@pytest.mark.slow
@settings(FUZZ, max_examples=1000)
@given(case=mutated_session())
def test_fuzz_open_run_source_gives_a_record_or_one_sentence(
    tmp_path_factory: pytest.TempPathFactory, session: Session, case: tuple[str, str, str, bytes]
) -> None:
    """Slow: 1,000 generated session files, each converted."""
    folder, name, named, data = case
    tmp = tmp_path_factory.mktemp("fuzz")
    path = session(folder, name, data)
    message = None
    try:
        open_run_source(path, tmp / "work", None if named == "detect" else named)
    except RunRecordError as error:
        message = str(error)
    event("read" if message is None else "refused")
    if message is not None:
        assert message.strip(), "an empty message"
        assert "\n" not in message, message


@settings(FUZZ, max_examples=300)
@given(case=mutated_session())
def test_fuzz_evidence_cli_on_a_session_exits_0_or_2_without_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, session: Session, case: tuple[str, str, str, bytes]
) -> None:
    folder, name, named, data = case
    tmp = tmp_path_factory.mktemp("fuzz")
    path = session(folder, name, data)
    harness = [] if named == "detect" else ["--harness", named]
    result = run_cli(["evidence", str(path), *harness, "--dir", str(tmp / "private")])
    one_sentence_or_success(result)
    event(f"exit {result.exit_code}")
