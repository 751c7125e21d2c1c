from __future__ import annotations

import os
import stat
from pathlib import Path

import git
import pytest

from active_memory.errors import RecallError, SnapshotError
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import ActiveMemoryConfig, RuntimeConfig
from active_memory.models.lessons import Lesson
from active_memory.models.runs import graph_hash
from active_memory.recall.wire import opened_answer, signed_request
from active_memory.store.backend import RunIdentity, Snapshot, SnapshotRequest
from recall.kit import (
    GRAPH,
    REPOSITORY,
    WORKSPACE,
    FakeBackend,
    graph_lesson,
    lesson,
    lesson_id,
)


def runtime(**memory: object) -> RuntimeConfig:
    return RuntimeConfig(active_memory=ActiveMemoryConfig(**memory))  # type: ignore[arg-type]


def opened(*cards: Lesson, **memory: object) -> tuple[ActiveRun, FakeBackend]:
    backend = FakeBackend(cards)
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=GRAPH)
    return open_run(identity, runtime(**memory), backend, WORKSPACE), backend


def test_open_run_takes_one_scoped_snapshot() -> None:
    run, backend = opened(lesson(1, files=["a.py"]), graph_lesson(2, "build"))
    with run:
        assert len(backend.requests) == 1
        assert backend.requests[0] == SnapshotRequest(run.identity, True, True)
        assert run.generation == 1


def test_scope_opt_outs_reach_the_snapshot_request() -> None:
    run, backend = opened(lesson(1, files=["a.py"]), repository=False)
    with run:
        assert (backend.requests[0].repository, backend.requests[0].graph) == (False, True)


def test_memory_disabled_takes_no_snapshot_and_needs_no_hooks() -> None:
    run, backend = opened(lesson(1, files=["a.py"]), repository=False, graph=False)
    with run:
        assert backend.requests == []
        assert run.hook_env("build", "c1") == {}
        assert run.graph_guidance("build", "c1") == ""


def test_a_failed_snapshot_is_an_error_not_an_empty_run() -> None:
    class Failing(FakeBackend):
        def snapshot(self, request: SnapshotRequest) -> Snapshot:
            raise SnapshotError("disk on fire")

    with pytest.raises(SnapshotError):
        open_run(RunIdentity("r"), RuntimeConfig(), Failing([]), WORKSPACE)


def test_repository_key_defaults_to_the_workspace_origin(tmp_path: Path) -> None:
    git.Repo.init(tmp_path).create_remote("origin", "https://user:pw@github.com/acme/widgets.git")
    backend = FakeBackend([lesson(1, files=["a.py"])])
    with open_run(RunIdentity("r"), RuntimeConfig(), backend, tmp_path) as run:
        assert run.identity.repository == REPOSITORY
        assert backend.requests[0].identity.repository == REPOSITORY


def test_hook_env_starts_the_broker_lazily_and_names_everything() -> None:
    run, _ = opened(lesson(1, files=["a.py"]))
    with run:
        env = run.hook_env("build", "conv-1", "exec-1")
        assert set(env) == {
            "ACTIVE_MEMORY_BROKER", "ACTIVE_MEMORY_TOKEN", "ACTIVE_MEMORY_NODE",
            "ACTIVE_MEMORY_CONVERSATION", "ACTIVE_MEMORY_EXECUTION", "ACTIVE_MEMORY_TICKET",
            "ACTIVE_MEMORY_LEDGER",
        }  # fmt: skip
        assert env["ACTIVE_MEMORY_BROKER"].startswith("127.0.0.1:")
        ticket = Path(env["ACTIVE_MEMORY_TICKET"])
        assert stat.S_IMODE(ticket.stat().st_mode) == 0o600
        assert env["ACTIVE_MEMORY_TOKEN"] in ticket.read_text()
        second = run.hook_env("review", "conv-2")
        assert second["ACTIVE_MEMORY_TOKEN"] == env["ACTIVE_MEMORY_TOKEN"]
        assert "ACTIVE_MEMORY_EXECUTION" not in second
    assert not ticket.exists()


def test_close_stops_serving_but_keeps_the_manifest() -> None:
    run, _ = opened(graph_lesson(1, "build"))
    run.graph_guidance("build", "c1")
    run.close()
    run.close()
    assert len(run.deliveries) == 1
    with pytest.raises(RecallError, match="closed"):
        run.hook_env("build", "c1")


def test_graph_guidance_is_framed_deduplicated_and_recorded_as_prompt_delivery() -> None:
    run, _ = opened(graph_lesson(1, "build"), graph_lesson(2, "review"))
    with run:
        text = run.graph_guidance("build", "conv-1", execution_id="e1")
        assert text.startswith("<active_memory>")
        assert f"[{lesson_id(1)}@1]" in text
        assert lesson_id(2) not in text
        assert run.graph_guidance("build", "conv-1") == ""
        assert run.graph_guidance("build", "conv-2") != ""
        first = run.deliveries[0]
        assert (first.channel, first.node_id, first.conversation_id, first.execution) == (
            "prompt", "build", "conv-1", "e1")  # fmt: skip


def test_graph_guidance_never_changes_the_authored_graph() -> None:
    authored = {"name": "g", "nodes": [{"id": "build", "instructions": "Build it."}]}
    before = graph_hash(authored)
    backend = FakeBackend([graph_lesson(1, "build", graph_hash=before)])
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=before)
    with open_run(identity, RuntimeConfig(), backend, WORKSPACE) as run:
        text = run.graph_guidance("build", "c1")
        prompt = authored["nodes"][0]["instructions"] + "\n\n" + text  # type: ignore[index]
    assert lesson_id(1) in prompt
    assert graph_hash(authored) == before


def test_graph_guidance_respects_the_node_budget() -> None:
    cards = [graph_lesson(n, "build") for n in range(1, 30)]
    run, _ = opened(*cards, node_injection_tokens=200)
    with run:
        text = run.graph_guidance("build", "c1")
        assert 0 < len(text.encode()) <= 800
        assert len(run.deliveries) < len(cards)


def test_graph_guidance_without_a_graph_hash_is_empty() -> None:
    backend = FakeBackend([graph_lesson(1, "build")])
    with open_run(RunIdentity("r", repository=REPOSITORY), RuntimeConfig(), backend,
                  WORKSPACE) as run:  # fmt: skip
        assert run.graph_guidance("build", "c1") == ""


def test_run_is_usable_from_sync_code_with_parallel_hooks() -> None:
    import socket
    from concurrent.futures import ThreadPoolExecutor

    run, _ = opened(lesson(1, folders=["src"]), lesson(2, folders=["src"]))
    with run:
        env = run.hook_env("build", "conv-1")
        host, port = env["ACTIVE_MEMORY_BROKER"].split(":")

        def call(number: int) -> bytes:
            payload = {"tool_name": "Read", "tool_input": {"file_path": f"src/f{number}.py"},
                       "cwd": WORKSPACE, "hook_event_name": "PreToolUse"}  # fmt: skip
            token = env["ACTIVE_MEMORY_TOKEN"]
            message = {"harness": "claude", "conversation_id": "conv-1", "payload": payload}
            request, nonce = signed_request(token, message)
            with socket.create_connection((host, int(port)), timeout=5) as sock:
                sock.sendall(request)
                size = int.from_bytes(sock.recv(4, socket.MSG_WAITALL), "big")
                body = opened_answer(token, nonce, sock.recv(size, socket.MSG_WAITALL)) or b""
                ack = b'{"ack":true}'
                sock.sendall(len(ack).to_bytes(4, "big") + ack)
                sock.recv(1)
            return body

        with ThreadPoolExecutor(8) as pool:
            bodies = list(pool.map(call, range(16)))
        assert len(run.receipts) == 16
        delivered = sorted(d.lesson_id for d in run.deliveries)
        assert delivered == [lesson_id(1), lesson_id(2)]
        assert sum(lesson_id(1).encode() in body for body in bodies) == 1


def test_workspace_may_be_a_symlinked_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink(real, link)
    backend = FakeBackend([lesson(1, files=["a.py"])])
    with open_run(RunIdentity("r", repository=REPOSITORY), RuntimeConfig(), backend, link) as run:
        assert str(real) in run.session.root.roots
