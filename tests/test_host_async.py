"""The host API inside a running event loop: sync calls and their async siblings both work."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest

from active_memory import host as host_module
from active_memory.errors import RecallError
from active_memory.host import ActiveRun, open_run
from active_memory.models.config import RuntimeConfig
from active_memory.recall.broker import RecallBroker
from active_memory.recall.wire import opened_answer, signed_request
from active_memory.store.backend import RunIdentity
from recall.kit import GRAPH, REPOSITORY, WORKSPACE, FakeBackend, lesson, lesson_id


def opened() -> ActiveRun:
    identity = RunIdentity("run-1", repository=REPOSITORY, graph_hash=GRAPH)
    backend = FakeBackend([lesson(1, files=["src/a.py"])])
    return open_run(identity, RuntimeConfig(), backend, WORKSPACE)


def ask(env: dict[str, str], path: str = "src/a.py") -> bytes:
    """One helper-frame hook call to the broker ``env`` names, acknowledged."""
    host, port = env["ACTIVE_MEMORY_BROKER"].split(":")
    payload = {"tool_name": "Read", "tool_input": {"file_path": path}, "cwd": WORKSPACE,
               "hook_event_name": "PreToolUse"}  # fmt: skip
    token = env["ACTIVE_MEMORY_TOKEN"]
    message = {
        "harness": "claude",
        "payload": payload,
        "node_id": env["ACTIVE_MEMORY_NODE"],
        "conversation_id": env["ACTIVE_MEMORY_CONVERSATION"],
    }
    request, nonce = signed_request(token, message)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        size = int.from_bytes(sock.recv(4, socket.MSG_WAITALL), "big")
        body = opened_answer(token, nonce, sock.recv(size, socket.MSG_WAITALL)) or b""
        ack = b'{"ack":true}'
        sock.sendall(len(ack).to_bytes(4, "big") + ack)
        sock.recv(1)
    return body


def test_the_sync_calls_work_inside_asyncio_run_and_the_broker_answers() -> None:
    async def main() -> tuple[ActiveRun, bytes]:
        with opened() as run:
            env = run.hook_env("build", "conv-1")
            # The host's loop stays free while a harness calls: answer from a worker thread.
            body = await asyncio.to_thread(ask, env)
            return run, body

    run, body = asyncio.run(main())
    assert lesson_id(1).encode() in body
    assert [(d.lesson_id, d.conversation_id) for d in run.deliveries] == [(lesson_id(1), "conv-1")]
    assert len(run.receipts) == 1


def test_the_async_siblings_and_async_with() -> None:
    async def main() -> tuple[ActiveRun, dict[str, str], bytes]:
        async with opened() as run:
            env = await run.ahook_env("build", "conv-1", "exec-1")
            wiring = await run.aharness_wiring("codex", "build", "conv-2")
            body = await asyncio.to_thread(ask, env)
            assert wiring.env["ACTIVE_MEMORY_TOKEN"] == env["ACTIVE_MEMORY_TOKEN"]
            return run, env, body

    run, env, body = asyncio.run(main())
    assert lesson_id(1).encode() in body
    assert env["ACTIVE_MEMORY_EXECUTION"] == "exec-1"
    assert not Path(env["ACTIVE_MEMORY_TICKET"]).exists()  # aclose removed the tickets
    with pytest.raises(RecallError, match="closed"):
        run.hook_env("build", "conv-1")
    host, port = env["ACTIVE_MEMORY_BROKER"].split(":")
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, int(port)), 1):
        pass  # the broker no longer listens


def test_many_hosts_tasks_share_one_broker() -> None:
    async def main() -> set[str]:
        with opened() as run:
            envs = await asyncio.gather(
                *(run.ahook_env("build", f"conv-{n}") for n in range(8)),
                *(asyncio.to_thread(run.hook_env, "build", f"conv-t{n}") for n in range(8)),
            )
            return {env["ACTIVE_MEMORY_BROKER"] for env in envs}

    assert len(asyncio.run(main())) == 1


def test_the_broker_runs_on_its_own_thread_not_the_callers() -> None:
    seen: list[str] = []

    async def main() -> None:
        with opened() as run:
            run.hook_env("build", "conv-1")
            broker = run.broker()
            assert broker._thread is not None
            seen.append(broker._thread.name)
            assert broker._thread is not threading.current_thread()

    asyncio.run(main())
    assert seen == ["active-memory-broker"]


def test_a_broker_that_cannot_start_is_one_error_and_the_run_stays_usable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Refusing(RecallBroker):
        def start(self) -> RecallBroker:
            raise RecallError("cannot listen on 127.0.0.1:0 (refused); choose another port or 0")

    monkeypatch.setattr(host_module, "RecallBroker", Refusing)

    async def main() -> None:
        with opened() as run:
            with pytest.raises(RecallError, match="cannot listen"):
                run.hook_env("build", "conv-1")
            assert run.graph_guidance("build", "conv-1") == ""  # no graph lesson, no error

    asyncio.run(main())


def test_a_broker_start_that_hangs_is_abandoned_and_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    closed = threading.Event()

    class Slow(RecallBroker):
        def start(self) -> RecallBroker:
            release.wait(5)
            return super().start()

        def close(self) -> None:
            super().close()
            closed.set()

    monkeypatch.setattr(host_module, "RecallBroker", Slow)
    monkeypatch.setattr(host_module, "BROKER_START_TIMEOUT_S", 0.05)
    with opened() as run, pytest.raises(RecallError, match="did not start within"):
        run.hook_env("build", "conv-1")
    release.set()
    assert closed.wait(5), "a broker that started after the caller gave up kept listening"
