"""Each run memory init cannot prove or use is an explicit exclusion with its reason, and it
does not stop the other repositories."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import git

from active_memory.lanes import SPECIALIST_SESSION_MARKER
from history_init.conftest import Machine
from history_init.kit import claude_session, codex_session, saved_record


def _exclusion(data: dict[str, Any], source: Path) -> dict[str, Any]:
    found = [item for item in data["exclusions"] if item["source"] == str(source)]
    assert len(found) == 1, data["exclusions"]
    return found[0]


def _with_good_repository(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("good"), 90)


def _selected(data: dict[str, Any]) -> set[str]:
    return {run["repository"] for run in data["runs"]}


def test_a_moved_checkout_is_excluded_and_nothing_is_cloned(machine: Machine) -> None:
    _with_good_repository(machine)
    path = machine.repo("moved")
    session = claude_session(machine.home, path, 1)
    shutil.move(path, machine.root / "elsewhere")
    data = machine.answer()
    item = _exclusion(data, session)
    assert item["code"] == "moved_checkout"
    assert "no longer exists" in item["reason"]
    assert _selected(data) == {"forge:github.com/acme/good"}
    assert not path.exists()


def test_a_changed_remote_is_excluded(machine: Machine) -> None:
    _with_good_repository(machine)
    path = machine.repo("renamed")
    session = codex_session(machine.home, path, 2, "git@github.com:acme/old-name.git")
    record = saved_record(machine.state, "saved", path, "forge:github.com/acme/old-name",
                          machine.root / "scratch")  # fmt: skip
    data = machine.answer()
    for source in (session, record):
        item = _exclusion(data, source)
        assert item["code"] == "changed_remote"
        assert "'forge:github.com/acme/old-name'" in item["reason"]
        assert "'forge:github.com/acme/renamed'" in item["reason"]
    assert _selected(data) == {"forge:github.com/acme/good"}


def test_a_dirty_checkout_is_excluded(machine: Machine) -> None:
    _with_good_repository(machine)
    path = machine.repo("dirty")
    session = claude_session(machine.home, path, 3)
    (path / "app" / "settings.py").write_text("APP_TIMEOUT = 6\n")
    data = machine.answer()
    item = _exclusion(data, session)
    assert item["code"] == "dirty"
    assert "uncommitted" in item["reason"]
    assert _selected(data) == {"forge:github.com/acme/good"}


def test_a_workspace_outside_git_is_excluded(machine: Machine) -> None:
    _with_good_repository(machine)
    plain = machine.root / "plain-folder"
    plain.mkdir()
    session = claude_session(machine.home, plain, 4)
    data = machine.answer()
    item = _exclusion(data, session)
    assert item["code"] == "not_git"
    assert _selected(data) == {"forge:github.com/acme/good"}


def test_an_opaque_or_foreign_repository_id_is_unproven(machine: Machine) -> None:
    _with_good_repository(machine)
    path = machine.repo("local-only", remote=None)
    opaque = saved_record(machine.state, "opaque", path, "repo:acme/thing", machine.root / "s")
    foreign = saved_record(machine.state, "foreign", path, "local:" + "0" * 32, machine.root / "s")
    data = machine.answer()
    for source in (opaque, foreign):
        assert _exclusion(data, source)["code"] == "unproven_identity"
    assert _selected(data) == {"forge:github.com/acme/good"}


def test_a_checkout_without_a_remote_is_proven_by_its_own_path_key(machine: Machine) -> None:
    path = machine.repo("local-only", remote=None)
    claude_session(machine.home, path, 5)
    data = machine.answer()
    assert data["exclusions"] == []
    (run,) = data["runs"]
    assert run["repository"].startswith("local:")
    assert run["aliases"][:2] == ["local-only", str(path)]


def test_a_folder_name_alias_ignores_every_repository_of_that_name(machine: Machine) -> None:
    first = machine.repo("api")
    second = machine.root / "other" / "api"
    second.parent.mkdir()
    git.Repo.clone_from(first, second).close()
    claude_session(machine.home, first, 6)
    claude_session(machine.home, second, 7)
    _with_good_repository(machine)
    data = machine.answer("--ignore-repos", "api")
    assert [item["code"] for item in data["exclusions"]] == ["ignored", "ignored"]
    assert _selected(data) == {"forge:github.com/acme/good"}


def test_ignore_values_are_exact_and_case_sensitive(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 8)
    data = machine.answer("--ignore-repos", "Alpha, acme/alph", "--ignore-repos", "alpha/")
    assert data["exclusions"] == []
    assert data["ignore_repos"] == ["Alpha", "acme/alph", "alpha/"]


def _edit_record(run_file: Path, **changes: Any) -> None:
    data = json.loads(run_file.read_text("utf-8"))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    run_file.write_text(json.dumps(data), "utf-8")
    os.utime(run_file, (0, 0))


def test_unfinished_unreadable_and_opted_out_runs_are_excluded(machine: Machine) -> None:
    _with_good_repository(machine)
    path = machine.repo("alpha")
    in_progress = claude_session(machine.home, path, 11, age=10)
    no_outcome = saved_record(machine.state, "running", path, "forge:github.com/acme/alpha",
                              machine.root / "s")  # fmt: skip
    _edit_record(no_outcome, outcome=None)
    opted_out = saved_record(machine.state, "quiet", path, "forge:github.com/acme/alpha",
                             machine.root / "s")  # fmt: skip
    _edit_record(opted_out, runtime={"globalAgents": {"postmortem": {"enabled": False}}})
    broken = machine.state / "runs" / "broken" / "run.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json", "utf-8")
    data = machine.answer()
    assert _exclusion(data, in_progress)["code"] == "unfinished"
    assert _exclusion(data, no_outcome)["code"] == "unfinished"
    assert _exclusion(data, opted_out)["code"] == "opted_out"
    assert _exclusion(data, broken)["code"] == "unreadable"
    assert _selected(data) == {"forge:github.com/acme/good"}


def test_a_specialists_own_claude_code_session_is_excluded(machine: Machine) -> None:
    _with_good_repository(machine)
    session = claude_session(machine.home, machine.repo("reviewed"), 3)
    asked = "tests/test_config.py::test_defaults fails on CI"
    text = session.read_text("utf-8")
    assert asked in text
    settled = session.stat().st_mtime  # a session written just now is still running
    session.write_text(text.replace(asked, f"{SPECIALIST_SESSION_MARKER}\\n\\n{asked}", 1))
    os.utime(session, (settled, settled))
    data = machine.answer()
    item = _exclusion(data, session)
    assert item["code"] == "specialist_session"
    assert item["reason"] == "it is a postmortem specialist's own session, run on a harness lane"
    assert _selected(data) == {"forge:github.com/acme/good"}
