"""One exposure ledger for a run's broker and the helper's store fallback.

A host whose event loop is busy answers after the helper's share of the call (150 ms of 250):
the helper then answers from the store itself. That card is the run's delivery, named once in
its deliveries and receipts, and neither answerer hands it to the conversation again.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import active_memory.host as host_module
from active_memory.hooks import fallback
from active_memory.hooks.install import helper_command
from active_memory.hooks.run_ledger import ENV_LEDGER, JOURNAL_NAME, RunLedger, write_fallback_entry
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import RuntimeConfig
from active_memory.recall.broker import BrokerAnswer, BrokerRequest, Handler
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from active_memory.recall.signals import WorkspaceRoot
from active_memory.store.backend import RunIdentity
from active_memory.store.sqlite import SqliteStore
from hooks.test_shared_exposure import CARD, CLEAN_ENV, Setup
from recall.kit import REPOSITORY, lesson_id, widgets_lessons

SLOW_S = 0.4  # past the helper's share (150 ms) and its whole call (250 ms)


class SlowBroker:
    """Wraps the run's broker handler: sleeps on the broker's loop while ``slow`` is set."""

    def __init__(self) -> None:
        self.slow = True
        self.answered = 0

    def wrap(self, make: Callable[..., Handler]) -> Callable[..., Handler]:
        def wrapped(*args: object, **kwargs: object) -> Handler:
            inner = make(*args, **kwargs)

            def handle(request: BrokerRequest) -> BrokerAnswer:
                if self.slow:
                    time.sleep(SLOW_S)  # a busy event loop: every call behind it waits too
                try:
                    return inner(request)
                finally:
                    self.answered += 1

            return handle

        return wrapped


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> SlowBroker:
    broker = SlowBroker()
    monkeypatch.setattr(host_module, "broker_handler", broker.wrap(host_module.broker_handler))
    return broker


@pytest.fixture
def run(setup: Setup) -> Iterator[ActiveRun]:
    identity = RunIdentity("run-1", repository=REPOSITORY)
    with (
        SqliteStore(setup.store, read_only=True) as backend,
        open_run(identity, RuntimeConfig(), backend, setup.workspace) as active,
    ):
        yield active


def _ask(setup: Setup, env: dict[str, str], payload: bytes) -> str:
    command = helper_command("claude", store=str(setup.store), workspace=str(setup.workspace))
    done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True, timeout=60,
                          env={**CLEAN_ENV, **env})  # fmt: skip
    assert (done.returncode, done.stderr) == (0, b"")
    answer = json.loads(done.stdout)
    return answer["hookSpecificOutput"]["additionalContext"] if answer else ""  # type: ignore[no-any-return]


def _eventually(condition: Callable[[], bool], within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_slow_broker_delivers_the_card_once_and_the_run_records_it_once(
    setup: Setup, slow: SlowBroker, run: ActiveRun
) -> None:
    env = run.hook_env("build", "conversation-1", "execution-1")
    assert ENV_LEDGER in env
    assert CARD in _ask(setup, env, setup.payload)  # the fallback answered in time
    assert _ask(setup, env, setup.payload) == ""  # the fallback again: it read the run's file
    assert _eventually(lambda: slow.answered == 2)  # the late broker saw both calls
    slow.slow = False
    assert _ask(setup, env, setup.payload) == ""  # the broker now answers, and knows
    deliveries = [d for d in run.deliveries if d.lesson_id == lesson_id(1)]
    receipts = run.receipts
    assert len(deliveries) == 1, deliveries
    assert (deliveries[0].conversation_id, deliveries[0].node_id) == ("conversation-1", "build")
    assert deliveries[0].execution == "execution-1"
    # One receipt per tool call, whoever answered it; the delivery names the first.
    assert [r.paths for r in receipts] == [("src/widgets/config.py",)] * 3
    assert deliveries[0].receipt_seq == receipts[0].seq
    assert len({r.seq for r in receipts}) == 3


def test_the_fallback_names_the_run_ledger_variable_as_the_run_ledger_does() -> None:
    """The fallback checks the variable before it imports this module (a plain call skips it)."""
    assert fallback._ENV_LEDGER == ENV_LEDGER


def test_another_conversation_still_gets_the_card(
    setup: Setup, slow: SlowBroker, run: ActiveRun
) -> None:
    first = run.hook_env("build", "conversation-1")
    second = run.hook_env("review", "conversation-2")
    assert CARD in _ask(setup, first, setup.payload)
    assert CARD in _ask(setup, second, setup.payload)
    assert _eventually(lambda: slow.answered == 2)
    assert sorted(d.conversation_id for d in run.deliveries) == ["conversation-1", "conversation-2"]


def test_subagents_of_one_run_conversation_each_get_the_card(setup: Setup, run: ActiveRun) -> None:
    """Claude Code's subagents share the run's conversation env; their agent_id keeps them
    apart, through the run's broker."""
    env = run.hook_env("build", "conversation-1")
    document = json.loads(setup.payload)
    subagent = json.dumps({**document, "agent_id": "a1f3"}).encode()
    assert CARD in _ask(setup, env, subagent)
    assert CARD in _ask(setup, env, setup.payload)
    assert _ask(setup, env, subagent) == ""
    conversations = sorted(d.conversation_id for d in run.deliveries)
    assert conversations == ["conversation-1", "conversation-1/agent:a1f3"]
    receipts = {r.seq for r in run.receipts}
    assert {d.receipt_seq for d in run.deliveries} <= receipts


def test_a_card_the_broker_delivered_is_not_delivered_by_the_fallback(
    setup: Setup, slow: SlowBroker, run: ActiveRun
) -> None:
    slow.slow = False
    env = run.hook_env("build", "conversation-1")
    assert CARD in _ask(setup, env, setup.payload)  # the broker, in time
    slow.slow = True
    assert _ask(setup, env, setup.payload) == ""  # the fallback reads the run's file
    assert len(run.deliveries) == 1


def test_the_journal_is_read_once_and_skips_what_is_not_an_entry(tmp_path: Path) -> None:
    ledger = RunLedger(tmp_path / "ledger")
    index = RecallIndex(widgets_lessons(), repository=REPOSITORY)
    session = RecallSession(index, WorkspaceRoot.at(tmp_path))
    key = f"{lesson_id(1)}@1"
    journal = Path(ledger.folder) / JOURNAL_NAME

    def entry(**changes: object) -> None:
        fields: dict[str, object] = {"call_id": "c1", "conversation": "k", "tracked": True,
                                     "node": "n", "execution": None, "tool": "Read",
                                     "paths": ["a.py"], "keys": [key]}  # fmt: skip
        fields.update(changes)
        assert write_fallback_entry(ledger.folder, **fields)  # type: ignore[arg-type]

    entry()
    with journal.open("ab") as raw:
        raw.write(b'{"call": 1}\nnot json\n')
    entry(call_id="c2", keys=["lesson-bad@1"])  # a key that is no key: refused whole
    entry(call_id="c3", keys=[])
    with journal.open("ab") as raw:
        raw.write(b'{"torn":')  # a write still under way: read once it is whole
    assert ledger.sync(session) == 2
    assert ledger.sync(session) == 0
    assert [d.key for d in session.ledger.deliveries] == [key]
    assert [r.tool for r in session.receipts.snapshot()] == ["Read", "Read"]
    entry(call_id="c1")  # after the torn line, on a line of its own; the same call again:
    assert ledger.sync(session) == 1  # its receipt, and no second delivery
    assert len(session.receipts.snapshot()) == 2
    assert len(session.ledger.deliveries) == 1


def test_no_journal_is_written_outside_a_private_folder(tmp_path: Path) -> None:
    folder = tmp_path / "open"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    written = write_fallback_entry(
        str(folder), call_id=None, conversation="k", tracked=False, node=None, execution=None,
        tool="Read", paths=[], keys=[],
    )  # fmt: skip
    assert not written
    assert not (folder / JOURNAL_NAME).exists()


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_no_journal_is_written_through_a_link_or_into_a_file_that_is_not_regular(
    tmp_path: Path, kind: str
) -> None:
    ledger = RunLedger(tmp_path / "ledger")
    journal = Path(ledger.folder) / JOURNAL_NAME
    target = tmp_path / "elsewhere.jsonl"
    if kind == "symlink":
        target.write_bytes(b"")
        journal.symlink_to(target)
    else:
        os.mkfifo(journal, 0o600)  # no journal: a line written in goes to whoever reads it
    written = write_fallback_entry(
        ledger.folder, call_id=None, conversation="k", tracked=False, node=None, execution=None,
        tool="Read", paths=[], keys=[],
    )  # fmt: skip
    assert not written
    assert not target.exists() or target.read_bytes() == b""
