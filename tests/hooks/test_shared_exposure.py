"""One exposure ledger per conversation on disk, shared by ``serve`` and the store fallback: a
restarted broker, or the other answerer, does not deliver a card again to that conversation.

The helper runs exactly as ``hooks install`` writes it (``--ticket`` and ``--store``): it asks
the broker while ``serve`` runs and reads the store itself once the ticket is gone.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from active_memory.hooks.dispatch import answer_hook
from active_memory.hooks.fallback import answer_from_store
from active_memory.hooks.install import helper_command
from active_memory.hooks.standalone import Server, serve_paths
from active_memory.store.sqlite import SqliteStore
from recall.kit import lesson_id, payload_in, seed_store, widgets_checkout, widgets_lessons

CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip
SESSION = b"3f2b9c1e-7a44"  # the start of the session id of claude/read.json
CARD = f"[{lesson_id(1)}@1]"  # the card claude/read.json matches


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.workspace = widgets_checkout(tmp_path / "widgets")
        self.store = tmp_path / "state" / "active-memory" / "lessons.sqlite3"
        seed_store(self.store, widgets_lessons())
        self.state_dir = self.store.parent / "serve"
        self.payload = payload_in("claude/read.json", self.workspace)
        self.ticket = serve_paths(self.state_dir, self.workspace)[1]

    def server(self, backend: SqliteStore) -> Server:
        return Server(backend, self.workspace, state_dir=self.state_dir, store=str(self.store),
                      poll_s=0.05)  # fmt: skip

    def document(self, conversation: bytes = SESSION, read: str | None = None) -> bytes:
        """claude/read.json in ``conversation``, reading ``read`` (a workspace path) if given."""
        payload = self.payload.replace(SESSION, conversation)
        if read is None:
            return payload
        return payload.replace(b"src/widgets/config.py", read.encode())

    def ask(self, conversation: bytes = SESSION, read: str | None = None) -> str:
        """The helper's answer (its additionalContext, or "" for ``{}``)."""
        command = helper_command("claude", ticket=str(self.ticket), store=str(self.store),
                                 workspace=str(self.workspace))  # fmt: skip
        payload = self.document(conversation, read)
        done = subprocess.run(["sh", "-c", command], input=payload, capture_output=True,
                              timeout=60, env=CLEAN_ENV)  # fmt: skip
        assert (done.returncode, done.stderr) == (0, b"")
        answer = json.loads(done.stdout)
        return answer["hookSpecificOutput"]["additionalContext"] if answer else ""  # type: ignore[no-any-return]


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


@pytest.fixture
def backend(setup: Setup) -> Iterator[SqliteStore]:
    with SqliteStore(setup.store, read_only=True) as opened:
        yield opened


def test_a_restarted_serve_does_not_deliver_again(setup: Setup, backend: SqliteStore) -> None:
    with setup.server(backend):
        assert CARD in setup.ask()
        assert setup.ask() == ""
    with setup.server(backend):  # a new process would read the same file
        assert setup.ask() == ""
        assert CARD in setup.ask(b"99999999-7a44")  # another conversation gets it
        assert setup.ask(b"99999999-7a44") == ""


def test_a_card_the_fallback_delivered_is_not_delivered_by_serve(
    setup: Setup, backend: SqliteStore
) -> None:
    assert not setup.ticket.exists()
    assert CARD in setup.ask()  # no broker: the helper reads the store
    with setup.server(backend):
        assert setup.ticket.exists()
        assert setup.ask() == ""
        assert CARD in setup.ask(b"99999999-7a44")


def test_a_card_serve_delivered_is_not_delivered_by_the_fallback(
    setup: Setup, backend: SqliteStore
) -> None:
    with setup.server(backend):
        assert CARD in setup.ask()
    assert not setup.ticket.exists()
    assert setup.ask() == ""  # the fallback answers now, and knows
    assert CARD in setup.ask(b"99999999-7a44")


def test_serve_reads_what_the_fallback_delivered_while_it_ran(
    setup: Setup, backend: SqliteStore
) -> None:
    """The helper falls back to the store when the broker is slow: the broker, already running
    and with the conversation known, still learns of that delivery."""
    other = b"99999999-7a44"
    with setup.server(backend):
        assert CARD in setup.ask(other)  # the broker has seen this conversation
        document = json.loads(setup.document(other, "docs/index.md"))
        answered = answer_from_store("claude", document, store=str(setup.store),
                                     workspace=str(setup.workspace))  # fmt: skip
        assert answered is not None
        body, commit = answered
        assert lesson_id(6).encode() in body
        commit()  # the fallback printed it
        assert setup.ask(other, "docs/index.md") == ""  # the broker answers, and knows
        assert lesson_id(6) in setup.ask(SESSION, "docs/index.md")


def test_an_unacknowledged_answer_is_not_recorded(setup: Setup, backend: SqliteStore) -> None:
    """Exposure is recorded once the answer was handed over, on disk as in memory."""
    with setup.server(backend) as served:
        assert served.session is not None
        answer = answer_hook(served.session, "claude", json.loads(setup.payload),
                             workspace_only=True)  # fmt: skip
        assert CARD.encode() in answer.body
        answer.release()  # the helper never acknowledged it
        ledgers = setup.store.parent / "exposure"
        assert not list(ledgers.glob("*.keys"))
        assert CARD in setup.ask()
        # The helper acknowledges and exits; the broker records on its own thread.
        assert _eventually(lambda: len(list(ledgers.glob("*.keys"))) == 1)


def _eventually(condition: Callable[[], bool], within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def test_serve_keeps_deduplicating_when_the_file_cannot_be_kept(
    setup: Setup, backend: SqliteStore
) -> None:
    """An exposure folder others can use is ignored: the broker still remembers in memory."""
    folder = setup.store.parent / "exposure"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    with setup.server(backend):
        assert CARD in setup.ask()
        assert setup.ask() == ""
    assert not list(folder.glob("*.keys"))
