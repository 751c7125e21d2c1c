"""What stops or refuses a call: a stale response, conflicting ignore lists, a second process
advancing the same session, a checkout that changed before publication, a session folder that
is not private."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import git

from active_memory.history_init.session_dir import (
    LOCK_FILE,
    RUNS_DIR,
    clear_interrupted_start,
    open_session_dir,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.store.sqlite import SqliteStore
from history_init.conftest import Machine
from history_init.kit import claude_session, keep_everything, read_task
from history_init.test_end_to_end import answer_open


def _to_maintenance(machine: Machine) -> dict[str, object]:
    claude_session(machine.home, machine.repo("alpha"), 1)
    answer_open(machine.answer())
    data = machine.answer()
    assert data["phase"] == "maintenance"
    return data


def _publish_elsewhere(machine: Machine) -> str:
    """Another postmortem publishes a repository lesson for alpha meanwhile."""
    lesson_id = new_lesson_id()
    draft = LessonDraft(
        scope=RepositoryScope(repository="forge:github.com/acme/alpha", files=("app/settings.py",)),
        title="Timeouts are seconds",
        recommendation="APP_TIMEOUT in app/settings.py is in seconds, never milliseconds.",
        evidence=Evidence(run_id="run-other", references=("exec:e1",), reason="seen elsewhere"),
    )
    with SqliteStore(machine.store) as store:
        store.publish(Publication(run_id="run-other", mutations=(
            Mutation(op="upsert", id=lesson_id, expected_revision=0, draft=draft),)))  # fmt: skip
    return lesson_id


def test_a_response_to_an_earlier_export_is_refused_as_stale(machine: Machine) -> None:
    data = _to_maintenance(machine)
    (item,) = data["tasks"]["items"]  # type: ignore[index]
    old = read_task(item["task_file"]) | {"task_file": item["task_file"]}
    stale = keep_everything(old)
    supplied_id = _publish_elsewhere(machine)

    fresh = machine.answer()
    assert fresh["phase"] == "maintenance"
    assert "fresh maintenance" in fresh["notes"][0]
    assert fresh["staged"]["staged"] == 1  # the staged finding is kept for the new round
    (again,) = fresh["tasks"]["items"]
    assert read_task(again["task_file"])["digest"] != old["digest"]
    supplied = json.loads((Path(again["task_file"]).parent / "supplied.json").read_text())
    assert [lesson["id"] for lesson in supplied] == [supplied_id]

    Path(again["response_file"]).write_text(json.dumps(stale))  # a slow subagent's answer
    refused = machine.answer()
    assert refused["phase"] == "maintenance"
    assert "stale" in refused["refused"][0]
    assert refused["tasks"]["open"] == 1
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1  # only the other postmortem's publication

    current = read_task(again["task_file"]) | {"task_file": again["task_file"]}
    Path(again["response_file"]).write_text(json.dumps(keep_everything(current)))
    done = machine.answer()
    assert done["phase"] == "complete"
    assert len(done["receipt"]["created"]) == 1


def test_a_maintenance_answer_that_leaves_a_staged_finding_undecided_is_refused(
    machine: Machine,
) -> None:
    data = _to_maintenance(machine)
    (item,) = data["tasks"]["items"]  # type: ignore[index]
    task = read_task(item["task_file"]) | {"task_file": item["task_file"]}
    response = keep_everything(task) | {"staged": []}
    Path(item["response_file"]).write_text(json.dumps(response))
    refused = machine.answer()
    assert "no decision" in refused["refused"][0]
    assert refused["tasks"]["open"] == 1


def test_deferred_findings_stay_inactive(machine: Machine) -> None:
    data = _to_maintenance(machine)
    (item,) = data["tasks"]["items"]  # type: ignore[index]
    task = read_task(item["task_file"]) | {"task_file": item["task_file"]}
    response = keep_everything(task)
    response["staged"] = [entry | {"action": "defer"} for entry in response["staged"]]
    Path(item["response_file"]).write_text(json.dumps(response))
    done = machine.answer()
    assert done["phase"] == "complete"
    assert (len(done["receipt"]["created"]), len(done["receipt"]["deferred"])) == (0, 1)
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.list_lessons() == ()


def test_a_conflicting_ignore_list_on_resume_is_refused(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    first = machine.answer("--ignore-repos", "beta,gamma")
    assert first["ignore_repos"] == ["beta", "gamma"]
    same = machine.answer("--ignore-repos", "gamma beta")  # the same list, written otherwise
    assert same["ignore_repos"] == ["beta", "gamma"]
    conflict = machine.init("--ignore-repos", "beta")
    assert conflict.exit_code == 2
    assert "start a new session" in conflict.stderr
    assert json.loads(conflict.stdout)["next_action"] == "start_new_session"
    graphs = machine.init("--ignore-graphs", "claude-code")
    assert graphs.exit_code == 2
    assert machine.answer()["ignore_repos"] == ["beta", "gamma"]


def test_a_second_process_holding_the_session_lock_refuses_advancement(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    machine.answer()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('locked', flush=True)\n"
         "time.sleep(120)\n",
         str(machine.session / LOCK_FILE)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        refused = machine.process()
        assert refused.returncode == 1
        assert "another `active-memory memory init` is advancing" in refused.stderr
        assert json.loads(refused.stdout)["next_action"] == "restore_or_wait"
    finally:
        holder.kill()
        holder.wait()
    assert machine.answer()["phase"] == "discovery"


def test_a_changed_remote_before_publication_stops_it(machine: Machine) -> None:
    data = _to_maintenance(machine)
    answer_open(data)  # type: ignore[arg-type]
    repo = git.Repo(machine.repos["alpha"])
    repo.remotes.origin.set_url("git@github.com:acme/other.git")  # tracked files unchanged
    stopped = machine.init()
    assert stopped.exit_code == 1
    assert "'forge:github.com/acme/other'" in stopped.stderr
    assert json.loads(stopped.stdout)["phase"] == "maintenance"
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 0
    repo.remotes.origin.set_url("git@github.com:acme/alpha.git")
    repo.close()
    assert machine.answer()["phase"] == "complete"


def test_a_source_change_before_publication_stops_it(machine: Machine) -> None:
    data = _to_maintenance(machine)
    answer_open(data)  # type: ignore[arg-type]
    repo = git.Repo(machine.repos["alpha"])
    (machine.repos["alpha"] / "app" / "settings.py").write_text("APP_TIMEOUT = 9\n")
    repo.index.add(["app/settings.py"])
    repo.index.commit("second")
    repo.close()
    stopped = machine.init()
    assert stopped.exit_code == 1
    assert "changed since the task was exported" in stopped.stderr
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 0


def test_a_session_folder_inside_a_checkout_or_not_private_is_refused(machine: Machine) -> None:
    path = machine.repo("alpha")
    machine.session = path / "session"
    inside = machine.init()
    assert inside.exit_code == 2
    assert "inside the git checkout" in inside.stderr
    assert not machine.session.exists()
    machine.session = machine.root / "open"
    machine.session.mkdir(mode=0o755)
    os.chmod(machine.session, 0o755)
    loose = machine.init()
    assert loose.exit_code == 2
    assert "not 700" in loose.stderr


def test_a_new_session_folder_is_private(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    machine.answer()
    assert (machine.session.stat().st_mode & 0o777) == 0o700
    assert (machine.session / "state.json").stat().st_mode & 0o077 == 0


# A first call that is SIGKILLed while writing its first checkpoint: os.replace of state.json
# never happens, so write_private_text's temporary stays behind under the real pid's name.
_KILLED_AT_FIRST_CHECKPOINT = """
import os, runpy, signal, sys
real = os.replace
def replace(source, target, *args, **kwargs):
    if os.fspath(target).endswith("state.json"):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(source, target, *args, **kwargs)
os.replace = replace
sys.argv = ["active-memory", *sys.argv[1:]]
runpy.run_module("active_memory.cli.main", run_name="__main__")
"""


def test_a_first_call_killed_during_its_first_checkpoint_starts_over(machine: Machine) -> None:
    import signal

    from history_init.conftest import SRC

    claude_session(machine.home, machine.repo("alpha"), 1)
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_AT_FIRST_CHECKPOINT, *machine.args()],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    leftovers = [name for name in os.listdir(machine.session) if name.endswith(".tmp")]
    assert len(leftovers) == 1
    assert re.fullmatch(r"\.state\.json\.[0-9]+\.[0-9]+\.tmp", leftovers[0])
    assert not (machine.session / "state.json").exists()

    data = machine.answer()
    assert data["phase"] == "discovery"
    assert data["inventory"]["selected"] == 1
    assert not [name for name in os.listdir(machine.session) if name.endswith(".tmp")]


def test_a_first_call_killed_under_an_earlier_version_starts_over_too(tmp_path: Path) -> None:
    """Before write_private_text named its temporary by thread too, the name held the pid
    alone: a session folder such a call left is still an interrupted start, and is cleared."""
    session = tmp_path / "session"
    session.mkdir()
    session.chmod(0o700)
    (session / LOCK_FILE).touch()
    (session / RUNS_DIR).mkdir()
    (session / ".state.json.4242.tmp").write_text("{", encoding="utf-8")
    assert open_session_dir(session) == (session, False)
    clear_interrupted_start(session)
    assert os.listdir(session) == [LOCK_FILE]
