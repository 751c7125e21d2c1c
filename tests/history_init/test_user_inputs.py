"""Bad input a new user gives memory init: refused before any work (exit 2, one sentence, no
session created), and interruptions that leave a session the next call resumes."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from active_memory.history_init.session_dir import LOCK_FILE
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from history_init.conftest import Machine
from history_init.kit import claude_session


def _init(machine: Machine, *extra: str) -> tuple[int, str, str]:
    args = ["memory", "init", "--dir", str(machine.session), "--json", *extra]
    result = run_cli(args)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("store", "scheme"),
    [
        ("postgresql://init:hunter2@db.internal/lessons", "postgresql"),
        ("https://memory.example.invalid/", "https"),
    ],
)
def test_a_store_url_is_refused_before_any_work(machine: Machine, store: str, scheme: str) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    code, stdout, stderr = _init(machine, "--store", store)
    assert code == 2
    assert f"'{scheme}://…' is not a store file" in stderr
    assert "local SQLite store file" in stderr
    assert "hunter2" not in stderr + stdout  # a URL may carry a password: never echoed
    assert json.loads(stdout)["next_action"] == "fix_arguments"
    assert not machine.session.exists()  # nothing inventoried, nothing exported


@pytest.mark.parametrize(
    ("provider", "expected"),
    [
        ("nosuch", "'nosuch' is not a provider; known: anthropic, openai"),
        ("replay", "answers from a recorded exchanges file"),
    ],
)
def test_an_unusable_provider_is_refused_before_any_work(
    machine: Machine, provider: str, expected: str
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    code, _stdout, stderr = _init(machine, "--store", str(machine.store), "--provider", provider)
    assert code == 2
    assert expected in stderr
    assert not machine.session.exists()


def test_an_empty_directory_is_refused_not_taken_as_the_current_folder(machine: Machine) -> None:
    result = run_cli(["memory", "init", "--dir", " "])
    assert result.exit_code == 2
    assert "--dir is empty" in result.stderr


def test_a_first_call_interrupted_before_its_checkpoint_starts_over(machine: Machine) -> None:
    """A first call killed while converting sessions leaves its lock and runs/: the next call
    is not refused as a foreign folder, it starts the inventory again."""
    claude_session(machine.home, machine.repo("alpha"), 1)
    machine.session.mkdir(mode=0o700)
    (machine.session / LOCK_FILE).touch()
    (machine.session / "runs" / "half").mkdir(parents=True)
    (machine.session / "runs" / "half" / "run.json").write_text("{", "utf-8")
    data = machine.answer()
    assert data["phase"] == "discovery"
    assert data["inventory"]["selected"] == 1
    assert not (machine.session / "runs" / "half").exists()


def test_a_folder_with_a_runs_folder_but_no_lock_is_still_refused(machine: Machine) -> None:
    machine.session.mkdir(mode=0o700)
    (machine.session / "runs").mkdir()
    result = machine.init()
    assert result.exit_code == 2
    assert "holds no memory init session" in result.stderr
    assert (machine.session / "runs").exists()  # refused, never repaired


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_call_says_how_to_resume_and_the_next_call_does(
    machine: Machine, monkeypatch: pytest.MonkeyPatch, number: int
) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    import importlib

    advance_module = importlib.import_module("active_memory.history_init.advance")

    real = advance_module.discovery_tasks

    async def interrupted(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), number)  # delivered in the middle of the export
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    def unhandled(signum: int, frame: object) -> None:
        raise RuntimeError("the command left the signal unhandled")

    # Without the command's own handler, SIGTERM would end pytest itself: fail the test instead.
    previous = signal.signal(number, unhandled)
    monkeypatch.setattr(advance_module, "discovery_tasks", interrupted)
    try:
        result = machine.init()
    finally:
        assert signal.getsignal(number) is unhandled  # the command restored the handler
        signal.signal(number, previous)
    assert result.exit_code == 128 + number
    assert f"interrupted by {signal.Signals(number).name}" in result.stderr
    assert "call the same command again to resume" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert json.loads(result.stdout)["next_action"] == "call_again"

    monkeypatch.setattr(advance_module, "discovery_tasks", real)
    data = machine.answer()
    assert data["phase"] == "discovery"
    assert data["tasks"]["open"] == 2


def test_every_folder_the_session_writes_is_private(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    machine.answer()
    folders = [machine.session, *(p for p in machine.session.rglob("*") if p.is_dir())]
    assert {oct(folder.stat().st_mode & 0o777) for folder in folders} == {"0o700"}


def _one_open_response(machine: Machine) -> tuple[Path, dict[str, object]]:
    claude_session(machine.home, machine.repo("alpha"), 1)
    data = machine.answer()
    item = data["tasks"]["items"][0]
    return Path(item["response_file"]), item


def test_a_response_that_is_not_json_is_refused_with_the_file_named(machine: Machine) -> None:
    response, item = _one_open_response(machine)
    response.write_text('{"task": ', "utf-8")
    data = machine.answer()
    (refused,) = data["refused"]
    assert refused.startswith(f"{item['task']}: response.json is not valid JSON (line 1")
    assert not response.exists()
    assert (response.parent / "response.refused.json").read_text("utf-8") == '{"task": '
    assert data["tasks"]["open"] == 2


def test_a_response_symlink_is_refused_without_reading_its_target(machine: Machine) -> None:
    response, item = _one_open_response(machine)
    target = machine.root / "elsewhere.json"
    target.write_text(json.dumps({"task": item["task"], "digest": "x", "answer": {}}), "utf-8")
    response.symlink_to(target)
    (refused,) = machine.answer()["refused"]
    assert "response.json is a symlink" in refused
    assert target.exists()  # the link was moved aside; its target is untouched


def test_a_response_folder_is_refused_without_a_traceback(machine: Machine) -> None:
    response, _item = _one_open_response(machine)
    response.mkdir()
    result = machine.init()
    assert result.exit_code == 0, result.stderr
    (refused,) = json.loads(result.stdout)["refused"]
    assert "response.json is not a regular file; remove it" in refused
    assert response.is_dir()  # the user's folder is left for them to remove


def test_a_decision_on_an_unknown_lesson_id_refuses_the_answer_and_says_why(
    machine: Machine,
) -> None:
    from history_init.kit import keep_everything, read_task
    from history_init.test_end_to_end import answer_open
    from history_init.test_refusals import _publish_elsewhere

    claude_session(machine.home, machine.repo("alpha"), 1)
    _publish_elsewhere(machine)
    answer_open(machine.answer())
    (item,) = machine.answer()["tasks"]["items"]
    task = read_task(item["task_file"]) | {"task_file": item["task_file"]}
    response = keep_everything(task)
    assert len(response["answer"]["decisions"]) == 1  # the card published elsewhere
    response["answer"]["decisions"].append(
        response["answer"]["decisions"][0] | {"id": "lesson-01M8T72KY18R7GT49CDZDQ4K6Z"}
    )
    Path(item["response_file"]).write_text(json.dumps(response), "utf-8")
    data = machine.answer()
    (refused,) = data["refused"]
    assert "refused as a whole (foreign_id)" in refused
    assert "decide every card of supplied.json exactly once" in refused
    assert data["phase"] == "maintenance"
    assert data["staged"]["staged"] == 1


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (("--model", "claude-x"), "--model only applies"),
        (("--timeout-ms", "5"), "--timeout-ms only applies"),
        (("--model", "m", "--timeout-ms", "5"), "--model and --timeout-ms only apply"),
    ],
)
def test_provider_options_without_a_provider_are_refused(
    machine: Machine, extra: tuple[str, ...], named: str
) -> None:
    code, _stdout, stderr = _init(machine, "--store", str(machine.store), *extra)
    assert code == 2
    assert named in stderr
    assert not machine.session.exists()


def test_items_admission_refuses_are_listed_by_stage_and_code(machine: Machine) -> None:
    from history_init.kit import discovery_lesson, read_task

    claude_session(machine.home, machine.repo("alpha"), 1)
    data = machine.answer()
    (item,) = [i for i in data["tasks"]["items"] if i["specialist"] == "repository_discovery"]
    task = read_task(item["task_file"])
    lesson = discovery_lesson(task)
    lesson["associations"]["files"] = ["app/nope.py"]
    lesson["references"] = [f"exec:{task['executions'][0]}", "repository:app/nope.py"]
    response = {"task": task["task"], "digest": task["digest"], "answer": {"lessons": [lesson]}}
    Path(item["response_file"]).write_text(json.dumps(response), "utf-8")
    (rejection,) = machine.answer()["rejections"]
    assert rejection["task"] == task["task"]
    assert (rejection["index"], rejection["stage"]) == (0, "source")
    assert rejection["code"].startswith("cited_")
    text = run_cli(machine.args()[:-1])  # the same call without --json
    assert f"rejected   {task['task']} item 0: source {rejection['code']}" in text.stdout


def test_an_ignore_value_matching_no_run_is_said_once(machine: Machine) -> None:
    claude_session(machine.home, machine.repo("alpha"), 1)
    claude_session(machine.home, machine.repo("beta"), 2)
    first = machine.answer("--ignore-repos", "alpah,beta", "--ignore-graphs", "Claude-Code")
    assert first["inventory"]["selected"] == 1  # beta ignored, alpha kept
    (note,) = first["notes"]
    assert note.startswith("--ignore-repos 'alpah', --ignore-graphs 'Claude-Code' matched no run")
    assert machine.answer()["notes"] == []  # said on the first call only


@pytest.mark.parametrize("point", ["before_commit", "after_commit", "after_checkpoint"])
def test_ctrl_c_during_publication_resumes_to_exactly_one_publication(
    machine: Machine, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    import importlib

    from history_init.test_end_to_end import answer_open

    publication = importlib.import_module("active_memory.history_init.publication")
    claude_session(machine.home, machine.repo("alpha"), 1)
    answer_open(machine.answer())
    answer_open(machine.answer())

    def interrupt(name: str) -> None:
        if name == point:
            os.kill(os.getpid(), signal.SIGINT)

    original = publication._crash_point
    monkeypatch.setattr(publication, "_crash_point", interrupt)
    stopped = machine.init()
    assert stopped.exit_code == 130, stopped.stderr
    assert "interrupted by SIGINT" in stopped.stderr
    monkeypatch.setattr(publication, "_crash_point", original)
    done = machine.answer()
    assert done["phase"] == "complete"
    with SqliteStore(machine.store, read_only=True) as store:
        assert store.generation() == 1
        assert [lesson.id for lesson in store.list_lessons()] == done["receipt"]["created"]
    assert machine.answer()["receipt"] == done["receipt"]
