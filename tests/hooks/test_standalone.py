from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from active_memory.errors import RecallError
from active_memory.hooks.private_dir import private_dir
from active_memory.hooks.standalone import Server, find_live, serve_paths
from active_memory.hooks.ticket import read_ticket, write_ticket
from active_memory.models.lessons import Lesson
from active_memory.recall.broker_limits import BrokerLimits
from active_memory.recall.recall_session import Caller
from active_memory.recall.signals import ToolCall
from active_memory.store.backend import Snapshot, SnapshotRequest
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson, lesson_id


class Moving(FakeBackend):
    """A backend whose lessons and generation a test can change."""

    def replace(self, lessons: list[Lesson], generation: int) -> None:
        self.lessons = tuple(lessons)
        self._generation = generation


class Failing(Moving):
    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        if self._generation > 1:
            raise OSError("store unreadable")
        return super().snapshot(request)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "serve"


def beside(state_dir: Path) -> str:
    """A store path in the test's folder: exposures are kept in ``exposure/`` beside it."""
    return str(state_dir.parent / "lessons.sqlite3")


@pytest.fixture
def server(state_dir: Path) -> Iterator[Server]:
    backend = Moving([lesson(1, files=["a.py"])])
    with Server(backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir),
                repository=REPOSITORY, poll_s=0.02) as running:  # fmt: skip
        yield running


def read(served: Server, conversation: str) -> tuple[str, ...]:
    """One Read as a harness's hook call makes it (shared: the fallback may answer it too)."""
    assert served.session is not None
    recall = served.session.recall(ToolCall("Read", {"file_path": "a.py"}, WORKSPACE),
                                   Caller("standalone", conversation, shared=True))  # fmt: skip
    recall.commit()
    return recall.report.delivered


def test_serve_writes_private_state_and_ticket(server: Server, state_dir: Path) -> None:
    state_path, ticket_path = serve_paths(state_dir, WORKSPACE)
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    for path in (state_path, ticket_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    state = json.loads(state_path.read_text())
    assert (state["pid"], state["repository"], state["ticket"]) == (
        os.getpid(), REPOSITORY, str(ticket_path))  # fmt: skip
    assert read_ticket(ticket_path)[0] == state["url"]
    assert find_live(state_dir, WORKSPACE) == server.state()


def test_serve_reloads_when_the_generation_changes(server: Server) -> None:
    assert read(server, "c1") == (f"{lesson_id(1)}@1",)
    backend = server.backend
    assert isinstance(backend, Moving)
    backend.replace([lesson(1, files=["a.py"], revision=2)], generation=2)
    deadline = time.monotonic() + 5
    while server.generation != 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.generation == 2
    assert read(server, "c1") == (f"{lesson_id(1)}@2",)


def test_a_failed_reload_keeps_serving_the_last_snapshot(state_dir: Path) -> None:
    backend = Failing([lesson(1, files=["a.py"])])
    with Server(backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir),
                repository=REPOSITORY, poll_s=0.01) as served:  # fmt: skip
        backend.replace(list(backend.lessons), generation=2)
        time.sleep(0.1)
        assert served.generation == 1
        assert read(served, "c1") == (f"{lesson_id(1)}@1",)


def test_each_start_draws_a_new_token_and_close_removes_the_ticket(state_dir: Path) -> None:
    backend = Moving([lesson(1, files=["a.py"])])
    _, ticket = serve_paths(state_dir, WORKSPACE)
    tokens = []
    for _ in range(2):
        served = Server(
            backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir), repository=REPOSITORY
        )
        served.start()
        tokens.append(read_ticket(ticket)[1])
        served.close()
        assert not ticket.exists()
        assert find_live(state_dir, WORKSPACE) is None
    assert tokens[0] != tokens[1]


def test_a_ticket_left_by_a_crashed_serve_gives_its_port_but_not_its_token(
    state_dir: Path,
) -> None:
    backend = Moving([lesson(1, files=["a.py"])])
    _, ticket = serve_paths(state_dir, WORKSPACE)
    with socket.socket() as probe:  # a free port, as a crashed serve would have left it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    private_dir(state_dir)
    write_ticket(ticket, f"http://127.0.0.1:{port}/hook", "stale-token")
    with Server(backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir),
                repository=REPOSITORY) as served:  # fmt: skip
        assert served.state().url == f"http://127.0.0.1:{port}/hook"
        assert read_ticket(ticket)[1] != "stale-token"


def test_close_leaves_a_ticket_another_broker_rewrote(state_dir: Path) -> None:
    backend = Moving([lesson(1, files=["a.py"])])
    _, ticket = serve_paths(state_dir, WORKSPACE)
    served = Server(
        backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir), repository=REPOSITORY
    )
    served.start()
    write_ticket(ticket, "http://127.0.0.1:1/hook", "a-newer-broker")
    served.close()
    assert read_ticket(ticket)[1] == "a-newer-broker"


def test_a_second_server_for_the_same_workspace_is_refused(server: Server, state_dir: Path) -> None:
    other = Server(server.backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir))
    state_path, _ = serve_paths(state_dir, WORKSPACE)
    state = json.loads(state_path.read_text())
    state["pid"] = 1  # a live process that is not this one
    state_path.write_text(json.dumps(state))
    with pytest.raises(RecallError, match="already serves"):
        other.start()


def test_the_state_file_reads_back_and_a_damaged_one_is_no_broker(
    server: Server, state_dir: Path
) -> None:
    state_path, _ = serve_paths(state_dir, WORKSPACE)
    state = json.loads(state_path.read_text())
    assert state == server.state().model_dump(mode="json")
    assert find_live(state_dir, WORKSPACE) == server.state()
    for damaged in ({**state, "pid": str(state["pid"])}, {**state, "extra": 1}, {"pid": 1}):
        state_path.write_text(json.dumps(damaged))
        assert find_live(state_dir, WORKSPACE) is None
    state_path.write_text("not json")
    assert find_live(state_dir, WORKSPACE) is None


def test_state_directory_must_be_private(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    with pytest.raises(RecallError, match="chmod 700"):
        private_dir(shared)


def post_claude(served: Server, payload: dict[str, object]) -> dict[str, object]:
    url, token = read_ticket(served.state().ticket)
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
    try:
        connection.request("POST", "/hook/claude", json.dumps(payload),
                           {"Authorization": f"Bearer {token}"})  # fmt: skip
        response = connection.getresponse()
        assert response.status == 200
        return json.loads(response.read())  # type: ignore[no-any-return]
    finally:
        connection.close()


def claude_event(event: str, session: str, **fields: object) -> dict[str, object]:
    return {"session_id": session, "cwd": WORKSPACE, "hook_event_name": event, **fields}


def context(answer: dict[str, object]) -> str:
    return answer["hookSpecificOutput"]["additionalContext"]  # type: ignore[index,return-value]


def test_compaction_does_not_reset_exposure_but_a_new_revision_is_delivered(
    server: Server,
) -> None:
    read_a = claude_event("PreToolUse", "s-1", tool_name="Read",
                          tool_input={"file_path": f"{WORKSPACE}/a.py"})  # fmt: skip
    assert f"[{lesson_id(1)}@1]" in context(post_claude(server, read_a))
    # Claude Code compacts the conversation: the session id stays, the context is rebuilt.
    assert post_claude(server, claude_event("PreCompact", "s-1", trigger="auto")) == {}
    assert post_claude(server, claude_event("SessionStart", "s-1", source="compact")) == {}
    assert post_claude(server, read_a) == {}
    backend = server.backend
    assert isinstance(backend, Moving)
    backend.replace([lesson(1, files=["a.py"], revision=2)], generation=2)
    deadline = time.monotonic() + 5
    while server.generation != 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert f"[{lesson_id(1)}@2]" in context(post_claude(server, read_a))
    assert post_claude(server, read_a) == {}
    other = {**read_a, "session_id": "s-2"}
    assert f"[{lesson_id(1)}@2]" in context(post_claude(server, other))


def test_exposure_survives_a_restart_in_a_file_beside_the_store(state_dir: Path) -> None:
    backend = Moving([lesson(1, files=["a.py"])])
    for number in range(2):
        with Server(backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir),
                    repository=REPOSITORY) as served:  # fmt: skip
            expected = (f"{lesson_id(1)}@1",) if number == 0 else ()
            assert read(served, "c1") == expected
            assert read(served, "c1") == ()
    with Server(backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir),
                repository=REPOSITORY) as served:  # fmt: skip
        assert read(served, "c2") == (f"{lesson_id(1)}@1",)
    ledgers = sorted((state_dir.parent / "exposure").glob("*.keys"))
    assert len(ledgers) == 2
    assert [path.read_text() for path in ledgers] == [f"{lesson_id(1)}@1\n"] * 2


def test_serve_holds_connections_within_the_limits_it_is_given(state_dir: Path) -> None:
    backend = Moving([lesson(1, files=["a.py"])])
    limits = BrokerLimits(max_connections=8, max_per_peer=2, reserved_slots=1)
    with Server(backend, WORKSPACE, state_dir=state_dir, store=beside(state_dir),
                repository=REPOSITORY, limits=limits) as served:  # fmt: skip
        broker = served._broker
        assert broker is not None
        idle = [socket.create_connection(broker.address) for _ in range(3)]
        try:
            deadline = time.monotonic() + 5
            while broker.connection_stats["evicted"] < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert broker.connection_stats["open"] == 2  # one user: its oldest made way
            assert read(served, "c1") == (f"{lesson_id(1)}@1",)
        finally:
            for sock in idle:
                sock.close()
