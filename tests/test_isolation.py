"""The test-wide fixtures themselves: a temporary state, scrubbed settings, no network."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
from pathlib import Path

import httpx2
import pytest

from active_memory.latch import run_state_dir
from active_memory.store.paths import default_store_path, state_dir_variable
from inner_pytest import run_pytest
from isolation import NetworkBlocked, NetworkGuard, isolate_environment

TESTS = Path(__file__).parent
UNROUTABLE = "192.0.2.1"  # TEST-NET-1 (RFC 5737): documentation only, never routed


def test_the_default_store_and_home_are_temporary(isolated_state: dict[str, Path]) -> None:
    state = isolated_state[state_dir_variable()]
    assert default_store_path() == state / "lessons.sqlite3"
    assert run_state_dir(default_store_path().parent, "run-1").is_relative_to(state)
    assert Path.home() == isolated_state["HOME"]
    assert Path.home() != Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert Path(os.environ["XDG_STATE_HOME"]) == isolated_state["XDG_STATE_HOME"]


def test_provider_and_broker_settings_are_scrubbed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-developer-shell")
    monkeypatch.setenv("AWS_PROFILE", "work")
    monkeypatch.setenv("ACTIVE_MEMORY_BROKER", "127.0.0.1:1")
    monkeypatch.setenv("CODEX_HOME", "/home/dev/.codex")
    monkeypatch.setenv("COPILOT_CLI", "1")
    monkeypatch.setenv("UNRELATED", "kept")
    isolate_environment(monkeypatch, tmp_path)
    scrubbed = {
        "ANTHROPIC_API_KEY",
        "AWS_PROFILE",
        "ACTIVE_MEMORY_BROKER",
        "CODEX_HOME",
        "COPILOT_CLI",
    }
    assert not scrubbed & set(os.environ)
    assert os.environ["UNRELATED"] == "kept"


def test_a_connection_beyond_loopback_is_refused_before_any_packet(
    network_guard: NetworkGuard,
) -> None:
    with pytest.raises(NetworkBlocked, match=UNROUTABLE):
        socket.create_connection((UNROUTABLE, 80), timeout=1)
    for method in ("connect", "connect_ex"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            with pytest.raises(NetworkBlocked):
                getattr(sock, method)((UNROUTABLE, 80))
            # The real connect never ran: the socket is still unconnected.
            with pytest.raises(OSError, match="not connected"):
                sock.getpeername()
    with pytest.raises(NetworkBlocked, match=r"resolving 'example\.com'"):
        socket.getaddrinfo("example.com", 443)
    assert len(network_guard.take()) == 4


def test_loopback_and_unix_sockets_pass(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            assert sock.connect_ex(("localhost", port)) == 0
    assert socket.getaddrinfo("localhost", 80)
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)


async def test_a_refusal_the_code_under_test_swallows_is_still_recorded(
    network_guard: NetworkGuard,
) -> None:
    async with httpx2.AsyncClient() as client:
        # The HTTP stack wraps the refusal (an ExceptionGroup today); the record is what counts.
        with contextlib.suppress(Exception):
            await client.get(f"http://{UNROUTABLE}/")
    assert network_guard.take() == [f"a connection to ('{UNROUTABLE}', 80)"]


@pytest.mark.slow
def test_a_test_that_reaches_out_fails_even_when_it_catches_the_refusal(tmp_path: Path) -> None:
    """Slow: a pytest of its own, in a new process, with this suite's conftest."""
    for name in (
        "conftest.py",
        "isolation.py",
        "pg_cluster.py",
        "slow_reasons.py",
        "slow_first.py",
    ):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_reaches_out.py").write_text(
        "import socket\n\n"
        "def test_swallowing() -> None:\n"
        "    try:\n"
        f"        socket.create_connection(({UNROUTABLE!r}, 80), timeout=1)\n"
        "    except Exception:\n"
        "        pass\n"
    )
    run = run_pytest(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed, 1 error" in run.stdout
    assert f"the test tried to use the network: a connection to ('{UNROUTABLE}', 80)" in run.stdout


def test_a_real_claude_is_never_run_by_the_claude_code_lane() -> None:
    from active_memory.agents.providers.registry import create_provider
    from active_memory.errors import HarnessUnavailable
    from active_memory.models.runs import Binding

    binding = Binding(provider="anthropic", model="claude-sonnet-4-5", lane="claude-code")
    with pytest.raises(HarnessUnavailable, match="a test reached for the real claude") as caught:
        create_provider(binding)
    assert caught.value.cause == "harness_too_old"
