from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from active_memory.evidence.inventory import default_roots, find_sessions
from active_memory.evidence.inventory_scan import SPECIALIST_SESSION_REASON
from active_memory.lanes import SPECIALIST_SESSION_MARKER
from cli_runner import run_cli

FIXTURES = Path(__file__).parents[1] / "fixtures"
OLD = 1_700_000_000  # an mtime long past: the session is finished


def _home(root: Path) -> dict[str, Path]:
    """A home with one session of each harness (and a subagent file that is not a session)."""
    claude = root / ".claude" / "projects" / "-home-dev-order-service"
    codex = root / ".codex" / "sessions" / "2025" / "11" / "20"
    pi = root / ".pi" / "agent" / "sessions" / "--home-dev-order-service--"
    copilot = root / ".copilot" / "session-state"
    for folder in (claude, codex, pi, copilot):
        folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude" / "subagent-files.jsonl", claude)
    shutil.copytree(FIXTURES / "claude" / "subagent-files", claude / "subagent-files")
    (claude / "agent-a1b2c3.jsonl").write_text('{"type": "user", "sessionId": "x"}\n')
    for path in (FIXTURES / "codex").iterdir():
        shutil.copy(path, codex)
    for path in (FIXTURES / "pi").iterdir():
        shutil.copy(path, pi)
    shutil.copytree(FIXTURES / "copilot" / "session-state", copilot, dirs_exist_ok=True)
    for path in root.rglob("*.jsonl"):
        os.utime(path, (OLD, OLD))
    return default_roots({"HOME": str(root)})


def test_every_harness_session_is_found_in_its_default_location(tmp_path: Path) -> None:
    found = find_sessions(_home(tmp_path / "home"))
    assert sorted((entry.harness, Path(entry.path).name) for entry in found) == [
        ("claude", "subagent-files.jsonl"),
        ("codex", "rollout-2025-07-14T10-00-00-legacy.jsonl"),
        ("codex", "rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"),
        ("copilot", "events.jsonl"),
        ("pi", "2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl"),
    ]
    assert all(entry.reviewable for entry in found), [e.reason for e in found]
    pi = next(entry for entry in found if entry.harness == "pi")
    assert pi.cwd == "/home/dev/order-service"
    assert pi.models == ("claude-sonnet-4-5", "gpt-5.1-codex")
    assert pi.started_ms is not None
    assert pi.ended_ms is not None
    assert pi.started_ms < pi.ended_ms
    assert pi.repository is not None
    assert pi.repository.startswith("local:")


def test_an_environment_variable_moves_a_harness_location(tmp_path: Path) -> None:
    roots = default_roots({"HOME": str(tmp_path), "CODEX_HOME": "/srv/codex",
                           "ACTIVE_MEMORY_PI_DIR": "/srv/pi"})  # fmt: skip
    assert roots["codex"] == Path("/srv/codex/sessions")
    assert roots["pi"] == Path("/srv/pi")
    assert roots["claude"] == tmp_path / ".claude" / "projects"


def test_a_session_being_written_or_without_conversation_is_not_reviewable(
    tmp_path: Path,
) -> None:
    roots = _home(tmp_path / "home")
    live = next((roots["pi"]).rglob("*.jsonl"))
    os.utime(live, None)
    empty = roots["claude"] / "-home-dev-order-service" / "empty.jsonl"
    empty.write_text('{"type": "summary", "summary": "x", "leafUuid": "u1"}\n')
    os.utime(empty, (OLD, OLD))
    reasons = {Path(e.path).name: e.reason for e in find_sessions(roots) if not e.reviewable}
    assert reasons[live.name] is not None
    assert reasons[live.name].startswith("in progress")
    assert reasons["empty.jsonl"] == "no conversation in its first and last 256 KiB"


def test_a_specialists_own_session_is_listed_as_not_reviewable(tmp_path: Path) -> None:
    """A harness lane marks its specialist's first message; learning and memory init read the
    inventory, so neither reviews a postmortem's own session. A user who only quotes the marker
    mid-sentence is not mistaken for one."""
    roots = _home(tmp_path / "home")
    [codex] = [p for p in roots["codex"].rglob("rollout-2025-11-20*.jsonl")]
    text = codex.read_text()
    first = json.loads(text.splitlines()[0])
    marked = {
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": f"{SPECIALIST_SESSION_MARKER}\n\nreview the run"}
            ],
        },
    }
    codex.write_text(json.dumps(first) + "\n" + json.dumps(marked) + "\n"
                     + "\n".join(text.splitlines()[1:]) + "\n")  # fmt: skip
    quoted = roots["pi"].rglob("*.jsonl").__next__()
    said = "The billing client has no timeout"
    assert said in quoted.read_text()
    quoted.write_text(quoted.read_text().replace(said, f"{said} (see {SPECIALIST_SESSION_MARKER})"))
    for path in (codex, quoted):
        os.utime(path, (OLD, OLD))
    entries = {Path(e.path).name: e for e in find_sessions(roots)}
    assert entries[codex.name].reason == SPECIALIST_SESSION_REASON
    assert not entries[codex.name].reviewable
    assert entries[quoted.name].reviewable


def test_filters_by_harness_repository_and_date(tmp_path: Path) -> None:
    roots = _home(tmp_path / "home")
    assert {e.harness for e in find_sessions(roots, harness="codex")} == {"codex"}
    assert find_sessions(roots, repository=tmp_path) == ()
    late = find_sessions(roots, since_ms=1_764_590_000_000)  # 2025-12-01
    assert {e.harness for e in late} == {"pi", "copilot"}


def test_sessions_cli_lists_as_json_and_text(tmp_path: Path) -> None:
    roots = _home(tmp_path / "home")
    args = ["sessions", *(f"--home={name}={folder}" for name, folder in roots.items())]
    done = run_cli([*args, "--json", "--harness", "copilot"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert [entry["session_id"] for entry in data["sessions"]] == [
        "3c1f0a52-7d4e-4b8a-9e21-6f5d8c0b1a47"
    ]
    text = run_cli(args)
    assert text.exit_code == 0
    assert "5 session(s), 5 reviewable" in text.output


def test_sessions_cli_refuses_a_bad_date_in_one_sentence(tmp_path: Path) -> None:
    done = run_cli(["sessions", "--since", "last tuesday"])
    assert done.exit_code == 2
    assert "--since 'last tuesday' is not a date" in done.output


@pytest.mark.parametrize("harness", ["codex", "pi", "copilot"])
def test_evidence_cli_reads_any_harness_and_forces_one(tmp_path: Path, harness: str) -> None:
    path = next(p for p in sorted((FIXTURES / harness).rglob("*.jsonl")))
    done = run_cli(["evidence", str(path)])
    assert done.exit_code == 0, done.output
    assert f"(graph '{harness}'" in done.output
    forced = run_cli(["evidence", str(path), "--harness", "claude"])
    assert forced.exit_code == 2
    assert "Traceback" not in forced.output


def test_postmortem_accepts_harness_to_force_a_format(tmp_path: Path) -> None:
    codex = FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl"
    done = run_cli(
        ["postmortem", str(codex), "--harness", "claude", "--store", str(tmp_path / "s.db")]
    )
    assert done.exit_code == 2
    assert "is a Codex CLI session, not a Claude Code one; pass --harness codex" in done.output
    assert "Traceback" not in done.output


def test_special_files_among_sessions_are_listed_as_not_reviewable_by_type(
    tmp_path: Path,
) -> None:
    roots = _home(tmp_path / "home")
    project = roots["claude"] / "-home-dev-order-service"
    os.mkfifo(project / "fifo.jsonl")
    (project / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(roots["codex"] / "rollout-2025-11-21T09-00-00-fifo.jsonl")
    reasons = {Path(e.path).name: e.reason for e in find_sessions(roots) if not e.reviewable}
    assert reasons == {
        "fifo.jsonl": "it is a FIFO (named pipe), not a regular file (not opened)",
        "zero.jsonl": "it is a symbolic link, not a regular file (not followed)",
        "rollout-2025-11-21T09-00-00-fifo.jsonl":
            "it is a FIFO (named pipe), not a regular file (not opened)",
    }  # fmt: skip


def test_an_orphan_subagents_folder_is_listed_as_not_reviewable(tmp_path: Path) -> None:
    roots = _home(tmp_path / "home")
    project = roots["claude"] / "-home-dev-order-service"
    orphan = project / "0b9e-gone" / "subagents"
    orphan.mkdir(parents=True)
    (orphan / "agent-a1.jsonl").write_text('{"type": "user"}\n')
    found = [e for e in find_sessions(roots) if not e.reviewable]
    assert [(Path(e.path).relative_to(project), e.reason, e.size_bytes) for e in found] == [
        (Path("0b9e-gone/subagents"), "subagent files without their main session", 17)
    ]
    text = run_cli(["sessions", "--harness", "claude", "--home",
                                     f"claude={roots['claude']}"])  # fmt: skip
    assert "reviewable no: subagent files without their main session" in text.output


def test_a_postmortem_of_a_session_without_a_model_asks_for_one(tmp_path: Path) -> None:
    codex = FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl"
    done = run_cli(["postmortem", str(codex), "--store", str(tmp_path / "s.db")])
    assert done.exit_code != 0
    assert ("node 'codex' names no model to inherit (its session recorded none); pass "
            "--provider and --model") in done.stderr  # fmt: skip
    assert "Traceback" not in done.output
    assert done.stderr.count("\n") == 1


def test_a_session_without_a_model_takes_the_model_the_caller_names(tmp_path: Path) -> None:
    from active_memory.evidence.sources import open_run_source
    from active_memory.postmortem.binding import (
        BindingOverride,
        resolve_source_node,
        specialist_binding,
    )

    codex = FIXTURES / "codex" / "rollout-2025-07-14T10-00-00-legacy.jsonl"
    record = open_run_source(codex, tmp_path / "rec")
    node = resolve_source_node(record.graph, None)
    binding = specialist_binding(node, BindingOverride(provider="openai", model="gpt-5.1-codex"))
    assert (binding.provider, binding.model) == ("openai", "gpt-5.1-codex")


@pytest.mark.parametrize("harness", ["claude", "pi"])
def test_a_harness_home_is_accepted_as_well_as_its_sessions_folder(
    tmp_path: Path, harness: str
) -> None:
    roots = _home(tmp_path / "home")
    home = roots[harness].parent
    done = run_cli(["sessions", "--harness", harness, "--home",
                                     f"{harness}={home}", "--json"])  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert data["roots"][harness] == str(roots[harness])
    assert len(data["sessions"]) == 1


def test_a_folder_without_sessions_says_so_and_what_is_expected(tmp_path: Path) -> None:
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    done = run_cli(["sessions", "--harness", "pi", "--home", f"pi={empty}"])
    assert done.exit_code == 0
    assert (f"pi       sessions in {empty} (no pi sessions here: give the pi home, e.g. "
            "~/.pi/agent, or its sessions/ folder)") in done.output  # fmt: skip
    missing = run_cli(["sessions", "--harness", "pi", "--home",
                                        f"pi={tmp_path / 'nowhere'}"])  # fmt: skip
    assert f"sessions in {tmp_path / 'nowhere'} (not found)" in missing.output
    helped = run_cli(["sessions", "--help"])
    assert "PI_CODING_AGENT_DIR" in helped.output


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize(
    ("harness", "fixture"),
    [
        ("codex", "codex/rollout-2025-11-20T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"),
        ("pi", "pi/2025-12-01T14-00-00-000Z_019a7c3e-5b2d-7f10-9c4e-2d8b6a1f0e3c.jsonl"),
    ],
)
def test_only_claude_code_side_conversations_are_left_out(
    tmp_path: Path, harness: str, fixture: str
) -> None:
    # isSidechain is Claude Code's subagent marker; another harness's lines that carry the key
    # are still its main conversation.
    from active_memory.evidence.inventory_scan import scan_session

    marked = tmp_path / Path(fixture).name
    lines = (FIXTURES / fixture).read_text(encoding="utf-8").splitlines()
    marked.write_text(
        "".join(json.dumps({**json.loads(line), "isSidechain": True}) + "\n" for line in lines),
        encoding="utf-8",
    )
    plain, flagged = scan_session(harness, FIXTURES / fixture), scan_session(harness, marked)
    assert plain.conversation
    assert (flagged.conversation, flagged.session_id, flagged.cwd) == (
        True, plain.session_id, plain.cwd,
    )  # fmt: skip
