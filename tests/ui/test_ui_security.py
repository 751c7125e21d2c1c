"""The browser's guards, over a real loopback server: the one-time token, the session cookie,
CSRF and Origin on POSTs, the Host check, escaping, headers, and loopback-only binding."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from active_memory.errors import ConfigError
from active_memory.store.quarantine import Quarantine
from active_memory.ui import UiData, UiServer
from active_memory.ui.app import CSP
from active_memory.ui.security import SESSION_COOKIE, Sessions, check_loopback
from cli_runner import run_cli
from ui.ui_kit import HELD_NO, HELD_OK, HOSTILE, HOSTILE_TITLE, live_ids, make_ui_store

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_ui_store(tmp_path_factory.mktemp("ui-security"))


@pytest.fixture
def served(store_file: Path) -> Iterator[UiServer]:
    with UiServer(UiData(store_file, [store_file.parent.parent])) as server:
        yield server


@contextmanager
def _logged_in(server: UiServer) -> Iterator[tuple[httpx.Client, str]]:
    client = httpx.Client(base_url=server.url, follow_redirects=False)
    answer = client.get(server.login_url.removeprefix(server.url))
    assert answer.status_code == 303
    page = client.get("/quarantine")
    assert page.status_code == 200
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match is not None
    try:
        yield client, match.group(1)
    finally:
        client.close()


def test_no_cookie_no_page(served: UiServer) -> None:
    with httpx.Client(base_url=served.url) as client:
        for path in ("/", "/runs", "/quarantine", f"/lesson/{HOSTILE}", "/static/ui.css"):
            answer = client.get(path)
            assert answer.status_code == 403, path
            assert HOSTILE_TITLE not in answer.text
        posted = client.post(f"/quarantine/{HELD_OK}/approve", data={"csrf": "x"})
        assert posted.status_code == 403
    with httpx.Client(base_url=served.url, cookies={SESSION_COOKIE: "not-a-session"}) as forged:
        assert forged.get("/").status_code == 403


def test_the_token_opens_one_session_and_is_spent(served: UiServer) -> None:
    with httpx.Client(base_url=served.url, follow_redirects=False) as client:
        assert client.get("/login?token=wrong").status_code == 403
        first = client.get(served.login_url.removeprefix(served.url))
        assert first.status_code == 303
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        assert client.get("/").status_code == 200
    with httpx.Client(base_url=served.url, follow_redirects=False) as other:
        again = other.get(served.login_url.removeprefix(served.url))
        assert again.status_code == 403
        assert other.get("/").status_code == 403


def test_another_host_header_is_refused(served: UiServer) -> None:
    with _logged_in(served) as (client, _):
        rebound = client.get("/", headers={"host": "attacker.example:80"})
        assert rebound.status_code == 403


def test_posts_need_the_csrf_token_and_our_origin(served: UiServer, store_file: Path) -> None:
    with _logged_in(served) as (client, csrf):
        url = f"/quarantine/{HELD_NO}/reject"
        assert client.post(url).status_code == 403
        assert client.post(url, data={"csrf": "wrong"}).status_code == 403
        foreign = client.post(url, data={"csrf": csrf}, headers={"origin": "https://evil.example"})
        assert foreign.status_code == 403
        assert client.post(url, data={"csrf": csrf, "pad": "x" * 20_000}).status_code == 413
        many = "&".join(f"a{n}=1" for n in range(9))  # more fields than any form has
        crowded = client.post(
            url, content=many, headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert crowded.status_code == 413
        assert "content-security-policy" in crowded.headers
        with Quarantine(store_file, read_only=True) as quarantine:
            assert HELD_NO in {entry.id for entry in quarantine.entries()}
        done = client.post(url, data={"csrf": csrf}, headers={"origin": served.url})
        assert done.status_code == 303
        with Quarantine(store_file, read_only=True) as quarantine:
            assert HELD_NO not in {entry.id for entry in quarantine.entries()}
        assert HELD_NO not in live_ids(store_file)
        again = client.post(url, data={"csrf": csrf})
        assert again.status_code == 409
        assert "already rejected" in again.text


def test_a_markup_title_is_escaped_and_the_page_is_locked_down(served: UiServer) -> None:
    with _logged_in(served) as (client, _):
        for path in (f"/lesson/{HOSTILE}", "/?q=script"):
            page = client.get(path)
            assert page.status_code == 200
            assert "<script" not in page.text
            assert "<img" not in page.text
            assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page.text
            assert page.headers["content-security-policy"] == CSP
            assert page.headers["x-frame-options"] == "DENY"
            assert page.headers["cache-control"] == "no-store"
        assert "script-src" not in CSP
        assert "'unsafe-inline'" not in CSP
        echoed = client.get("/quarantine?approved=<b>planted-notice</b>&rejected=x")
        assert echoed.status_code == 200
        assert "planted-notice" not in echoed.text
        assert 'id="notice"' not in echoed.text
        hostile_query = client.get('/?q=<b onmouseover="x">')
        assert '<b onmouseover="x">' not in hostile_query.text


def test_an_unknown_lesson_and_a_bad_id_are_plain_refusals(served: UiServer) -> None:
    with _logged_in(served) as (client, _):
        assert client.get("/lesson/lesson-01JWAZ00000000000000000009").status_code == 404
        assert client.get("/lesson/nope").status_code == 400


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com", "10.0.0.1"])
def test_only_loopback_binds(host: str, store_file: Path) -> None:
    with pytest.raises(ConfigError, match="loopback"):
        check_loopback(host)
    with pytest.raises(ConfigError):
        UiServer(UiData(store_file, []), host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_addresses_are_accepted(host: str) -> None:
    assert check_loopback(host) == host


def test_a_bracketed_ipv6_loopback_gives_a_usable_link(store_file: Path) -> None:
    assert check_loopback("[::1]") == "::1"
    server = UiServer(UiData(store_file, []), host="[::1]")
    assert server.login_url.startswith("http://[::1]:")


def test_the_cli_refuses_a_network_bind_and_a_missing_store(tmp_path: Path) -> None:
    wide = run_cli(["ui", "--host", "0.0.0.0", "--store", str(tmp_path / "x")])
    assert wide.exit_code == 2
    assert "loopback" in wide.stderr
    absent = run_cli(["ui", "--store", str(tmp_path / "absent.sqlite3")])
    assert absent.exit_code == 2
    assert "no lesson store" in absent.stderr


def test_sessions_compare_digests_and_spend_the_token() -> None:
    sessions = Sessions()
    assert sessions.redeem("x" + sessions.token) is None
    assert sessions.redeem("") is None
    opened = sessions.redeem(sessions.token)
    assert opened is not None
    session, csrf = opened
    assert sessions.redeem(sessions.token) is None
    assert sessions.csrf_for(session) == csrf
    assert sessions.csrf_for(session + "x") is None
    assert Sessions.csrf_matches(csrf, csrf)
    assert not Sessions.csrf_matches(csrf, None)
    assert not Sessions.csrf_matches(csrf, csrf[:-1])


def test_the_cli_starts_without_the_web_libraries() -> None:
    """Starlette, uvicorn and Jinja2 are the `ui` extra: loading the CLI imports none of them."""
    import subprocess
    import sys

    code = (
        "import sys, active_memory.cli.main\n"
        "loaded = [m for m in ('jinja2', 'starlette', 'uvicorn', 'active_memory.ui') "
        "if m in sys.modules]\n"
        "print(loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_service_store_has_no_quarantine_to_decide() -> None:
    from active_memory.errors import QuarantineNotFound

    class Service:
        url = "https://memory.example.invalid"

    data = UiData(None, [], remote=Service())  # type: ignore[arg-type]
    for decide in (data.held, data.approve, data.reject):
        with pytest.raises(QuarantineNotFound):
            decide("lesson-01JWAZ00000000000000000009")
