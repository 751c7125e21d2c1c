"""Conformance: the four real harness CLIs, driven headless against a model stand-in on loopback.

Slow: every test starts a real harness CLI (a Node.js program of its own) at least once.

Run it with ``pytest tests/conformance`` (it also runs in the plain ``pytest`` run). The first
run installs the pinned npm packages (Claude Code, Codex, Copilot CLI, pi) into a cache folder,
``$ACTIVE_MEMORY_CONFORMANCE_CACHE`` or ``~/.cache/active-memory-conformance`` (see
``harnesses.py``); that install is the only step that reaches a network, the npm registry, and a
harness whose install fails is skipped with npm's reason. Nothing else leaves 127.0.0.1: each
CLI gets a temporary HOME and config folder, telemetry and update checks off, and a model base
URL on loopback; where ``strace`` is installed, every ``connect`` the CLI's process tree makes
is checked to be loopback (``ACTIVE_MEMORY_CONFORMANCE_STRACE=0`` turns that off).

In each run the stand-in asks for one tool call, a read of the file that has a lesson, and
then answers. The tests assert, per CLI, on what ``active-memory hooks install`` wrote:

* the card reached the model: it is in the request that carries the tool's result back, and
  not in the one before it;
* the receipt reached the run: the broker of an open run (``open_run`` + ``hook_env``), or of
  ``serve``, recorded the tool call with the file's path, and the card as delivered;
* a broker that is down lets the tool run: the call completes, the model gets the file's
  content and the CLI finishes normally (an open run's closed broker, and a stopped ``serve``);
* so does a hook whose interpreter or package has gone away: the command prints ``{}`` and
  exits 0 (Copilot CLI denies a tool whose hook errors);
* Copilot CLI, which also runs a project's Claude Code hooks, gets the card once when both are
  installed, and keeps loading that Claude settings file (with the user's own hooks in it)
  while ``serve`` runs;
* Copilot CLI reads a user-level install (``$COPILOT_HOME/hooks/active-memory.json``).

``ACTIVE_MEMORY_CONFORMANCE_RECORD=DIR`` keeps, per CLI and mode, what the model received after
the tool call (the tool result and the card) as JSON in DIR.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from active_memory.hooks.standalone import Server
from active_memory.host import open_run
from active_memory.models.config import RuntimeConfig
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from cli_runner import run_cli
from conformance.harnesses import HARNESSES, Harness, Installed
from conformance.kit import (
    CONTENT_MARKER,
    TARGET,
    Ran,
    Workspace,
    install_hooks,
    make_launcher,
    record,
    run_harness,
)
from conformance.stand_in import FINAL_TEXT, Recorded, StandIn
from folder_copies import package_copy

pytestmark = [pytest.mark.conformance, pytest.mark.slow, pytest.mark.timeout(300)]

# The mode `hooks install` picks without a running `serve`, and with one.
STANDALONE_MODE = {"claude": "helper", "codex": "helper", "copilot": "helper", "pi": "extension"}
SERVE_MODE = {"claude": "helper", "codex": "helper", "copilot": "helper", "pi": "extension"}


@pytest.fixture(params=sorted(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _holds(request: Recorded, line: str) -> bool:
    return any(line in text for text in _strings(request.body))


def _tail(request: Recorded) -> str:
    """The last turns of a request, where the tool's result is."""
    body = request.body if isinstance(request.body, dict) else {}
    turns = body.get("messages") or body.get("input") or []
    return json.dumps(turns[-2:] if isinstance(turns, list) else turns)[:1500]


def _completed(ran: Ran, model: StandIn) -> Recorded:
    """The run ended normally after one tool call, and the model got the file's content."""
    assert ran.process.returncode == 0, ran.output
    assert ran.foreign in (None, []), f"connects outside loopback: {ran.foreign}"
    calls = model.replies("tool_call")
    assert calls, f"the CLI never offered the read tool to the model\n{ran.output}"
    after = model.after_tool()
    assert after is not None, f"the tool's result never came back to the model\n{ran.output}"
    assert _holds(after, CONTENT_MARKER), f"the file never reached the model: {_tail(after)}"
    assert FINAL_TEXT in ran.process.stdout, ran.output
    return after


def _codex_returned_no_output(harness: Harness, model: StandIn) -> bool:
    after = model.after_tool()
    return (
        harness.name == "codex"
        and after is not None
        and not _holds(after, CONTENT_MARKER)
        and _holds(after, "Original token count: 0")
    )


def _card_reached_the_model(
    workspace: Workspace, model: StandIn, after: Recorded, *, evidence: tuple[str, str] = ("", "")
) -> None:
    name, cli = evidence
    if name:
        received = [
            text
            for text in _strings(after.body)
            if "active_memory" in text or CONTENT_MARKER in text
        ]
        record(name, {"cli": cli, "request": f"POST {after.path}", "received": received})
    for line in workspace.card_lines:
        assert _holds(after, line), f"{line!r} is not in the request after the tool call"
        assert not _holds(model.replies("tool_call")[0], line), "the card came before the call"


def _receipt(receipts: tuple[Any, ...], harness: Harness) -> None:
    matching = [r for r in receipts if r.tool == harness.hook_tool and TARGET in r.paths]
    assert matching, f"no {harness.hook_tool} receipt for {TARGET}: {receipts}"


def test_the_card_reaches_the_model_and_the_receipt_reaches_the_run(
    harness: Harness, installed: Installed, binary: Path, workspace: Workspace, stand_in: StandIn
) -> None:
    assert harness.version in installed.version, f"{harness.spec} runs as {installed.version}"
    hooks = install_hooks(harness, workspace)
    assert hooks["mode"] == STANDALONE_MODE[harness.name]
    conversation = f"conversation-{harness.name}"
    with (
        SqliteStore(workspace.store, read_only=True) as backend,
        open_run(
            RunIdentity("conformance-run"), RuntimeConfig(), backend, workspace.project
        ) as run,
    ):
        env = run.hook_env("build", conversation, "execution-1")
        ran = run_harness(harness, binary, workspace, stand_in, env)
        reran = _codex_returned_no_output(harness, stand_in)
        if reran:
            # Codex now and then hands back a quick command's result empty (exit 0, "Original
            # token count: 0"; seen once in CI, under strace). One rerun in a fresh HOME and
            # conversation tells that race from a broken hook, which fails both runs.
            stand_in.requests.clear()
            conversation = f"{conversation}-rerun"
            env = run.hook_env("build", conversation, "execution-1")
            ran = run_harness(harness, binary, workspace, stand_in, env, name="rerun")
        after = _completed(ran, stand_in)
        evidence = (f"{harness.name}-run", installed.version)
        _card_reached_the_model(workspace, stand_in, after, evidence=evidence)
        _receipt(run.receipts, harness)
        delivered = [
            (d.lesson_id, d.revision, d.conversation_id, d.channel, d.execution)
            for d in run.deliveries
            if d.conversation_id == conversation
        ]
        assert delivered == [(workspace.lesson.id, 1, conversation, "hook", "execution-1")]
        assert len(run.deliveries) == (2 if reran else 1)


def test_a_broker_that_is_down_lets_the_tool_run(
    harness: Harness, binary: Path, workspace: Workspace, stand_in: StandIn
) -> None:
    install_hooks(harness, workspace)
    with (
        SqliteStore(workspace.store, read_only=True) as backend,
        open_run(
            RunIdentity("conformance-run"), RuntimeConfig(), backend, workspace.project
        ) as run,
    ):
        env = run.hook_env("build", f"conversation-{harness.name}", "execution-1")
    # The run is closed: its broker no longer listens, yet the harness is told to ask it.
    ran = run_harness(harness, binary, workspace, stand_in, env)
    after = _completed(ran, stand_in)
    if STANDALONE_MODE[harness.name] == "helper":
        # The helper falls back to reading the store itself (the pi extension has no fallback).
        _card_reached_the_model(workspace, stand_in, after)


def test_serve_hooks_reach_the_broker_and_a_stopped_serve_lets_the_tool_run(
    harness: Harness, installed: Installed, binary: Path, workspace: Workspace
) -> None:
    state_dir = workspace.store.parent / "serve"
    with SqliteStore(workspace.store, read_only=True) as backend:
        server = Server(backend, workspace.project, state_dir=state_dir, store=str(workspace.store))
        server.start()
        try:
            hooks = install_hooks(harness, workspace)
            assert hooks["mode"] == SERVE_MODE[harness.name]
            with StandIn(harness.chooser(workspace.project, TARGET)) as model:
                ran = run_harness(harness, binary, workspace, model, name="served")
                after = _completed(ran, model)
                evidence = (f"{harness.name}-serve", installed.version)
                _card_reached_the_model(workspace, model, after, evidence=evidence)
            assert server.session is not None
            _receipt(server.session.receipts.snapshot(), harness)
            delivered = [d.key for d in server.session.ledger.deliveries]
            assert delivered == [workspace.lesson.key]
        finally:
            server.close()
        with StandIn(harness.chooser(workspace.project, TARGET)) as model:
            _completed(run_harness(harness, binary, workspace, model, name="stopped"), model)


@pytest.fixture(scope="module")
def launcher(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment's interpreter without active-memory (``make_launcher``), built once
    for the tests that delete the package and keep the interpreter."""
    return make_launcher(tmp_path_factory.mktemp("launcher") / "venv")


@pytest.mark.parametrize("harness", ["claude", "codex", "copilot"], indirect=True)
@pytest.mark.parametrize("gone", ["package", "interpreter"])
def test_a_hook_whose_interpreter_or_package_is_gone_lets_the_tool_run(
    harness: Harness,
    binary: Path,
    workspace: Workspace,
    stand_in: StandIn,
    gone: str,
    request: pytest.FixtureRequest,
) -> None:
    # Installed from a virtual environment's interpreter and a copy of the package, one then
    # removed, as when a virtual environment is deleted or rebuilt elsewhere. (pi's extension is
    # self-contained.) Only an interpreter to delete is made for the test; the package tests
    # share one they leave alone.
    sources = package_copy(workspace.root / "site")
    if gone == "package":
        python: Path = request.getfixturevalue("launcher")
    else:
        python = make_launcher(workspace.root / "venv")
    hooks = install_hooks(harness, workspace, python=str(python), sources=str(sources))
    written = Path(hooks["path"]).read_text(encoding="utf-8")
    assert str(python) in written
    assert str(sources) in written
    shutil.rmtree(sources if gone == "package" else python.parents[1])
    _completed(run_harness(harness, binary, workspace, stand_in), stand_in)


@pytest.mark.parametrize("harness", ["copilot"], indirect=True)
@pytest.mark.parametrize("broker", ["run", "serve"])
def test_copilot_with_claude_hooks_installed_too_gets_the_card_once(
    harness: Harness, binary: Path, workspace: Workspace, stand_in: StandIn, broker: str
) -> None:
    # Copilot CLI also runs the Claude Code hooks of .claude/settings.local.json, and would
    # ignore that whole file (with a warning) if it held a plain-http hook. The user's own
    # Claude hook there must keep running under Copilot.
    ran_marker = workspace.root / "user-claude-hook-ran"
    settings = workspace.project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    user_hook = {"type": "command", "command": f"cat >/dev/null; touch {ran_marker}; echo '{{}}'"}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [user_hook]}]}}),
        encoding="utf-8",
    )
    with contextlib.ExitStack() as stack:
        backend = stack.enter_context(SqliteStore(workspace.store, read_only=True))
        env: dict[str, str] = {}
        if broker == "serve":
            server = Server(
                backend,
                workspace.project,
                state_dir=workspace.store.parent / "serve",
                store=str(workspace.store),
            )
            server.start()
            stack.callback(server.close)
        else:
            run = stack.enter_context(
                open_run(
                    RunIdentity("conformance-run"), RuntimeConfig(), backend, workspace.project
                )
            )
            env = run.hook_env("build", "conversation-copilot", "execution-1")
        claude = install_hooks(HARNESSES["claude"], workspace)
        assert claude["mode"] == "helper"
        install_hooks(harness, workspace)
        ran = run_harness(harness, binary, workspace, stand_in, env)
        after = _completed(ran, stand_in)
        if broker == "serve":
            assert server.session is not None
            receipts = server.session.receipts.snapshot()
        else:
            receipts = run.receipts
    header = workspace.card_lines[0]
    assert sum(text.count(header) for text in _strings(after.body)) == 1, _tail(after)
    assert "could not be loaded" not in ran.process.stderr, ran.output
    assert ran_marker.exists(), "Copilot did not run the Claude settings file's own hooks"
    # One receipt for the one tool call: the Claude hook stayed silent under Copilot.
    assert len(receipts) == 1, receipts


@pytest.mark.parametrize("harness", ["copilot"], indirect=True)
def test_copilot_reads_a_user_level_install(
    harness: Harness,
    binary: Path,
    workspace: Workspace,
    stand_in: StandIn,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copilot_home = workspace.home / "run" / ".copilot"  # the home run_harness gives the CLI
    monkeypatch.setenv("COPILOT_HOME", str(copilot_home))
    # In this process, as install_hooks runs it: the same hook file, without ~0.5 CPU-s of a
    # start (the interpreter-or-package test runs `hooks install` in a process of its own).
    done = run_cli([
        "hooks", "install", "--harness", "copilot", "--repository", str(workspace.project),
        "--store", str(workspace.store), "--json",
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["path"] == str(copilot_home / "hooks" / "active-memory.json")
    assert not (workspace.project / ".github").exists()
    after = _completed(run_harness(harness, binary, workspace, stand_in), stand_in)
    _card_reached_the_model(workspace, stand_in, after)
