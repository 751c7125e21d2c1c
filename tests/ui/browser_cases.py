"""The browser in a real headless Chromium (Selenium, the system chromedriver; nothing is
downloaded): open the printed URL, find a lesson by search, read its revision diff, approve a
quarantined proposal and see it live (in the page and in the store), reject another.

Not collected by itself: :mod:`ui.test_ui_browser` runs this file in a network namespace that
has only loopback (``unshare -n``), so Chromium's own probes (its IPv6 reachability check aims
a UDP socket at a public resolver) have nowhere to go. Every case here first checks that it is
in such a namespace and fails otherwise.

``AM_UI_SHOTS=<folder>`` saves a screenshot of each page there (for a person to look at)."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.store.postgres import PostgresStore
from active_memory.store.quarantine import Quarantine, QuarantineEntry
from active_memory.ui import UiData, UiServer
from factories import make_draft
from ledger.ledger_kit import G1
from ui.ui_kit import (
    G1_NEW_TITLE,
    HELD_NO,
    HELD_OK,
    HOSTILE,
    HOSTILE_TITLE,
    live_ids,
    make_ui_store,
)

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (os.path.exists(CHROMEDRIVER) and os.path.exists(CHROMIUM)):
    pytest.skip(
        "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.timeout(120)

# The outer test (ui/test_ui_browser.py) hands over its own throwaway cluster's database: its
# Unix socket is a file, which the new network namespace does not hide, and this process then
# makes no second cluster (initdb alone is about 0.5 CPU-s). Run by hand, a case makes its own.
# Read at import, before any test's isolation of the environment.
OUTER_DATABASE = os.environ.get("AM_BROWSER_PG_URL")

# Background services Chromium would otherwise start (each may reach the network).
_QUIET_FEATURES = (
    "MediaRouter,DialMediaRouteProvider,OptimizationHints,Translate,NetworkTimeServiceQuerying,"
    "CertificateTransparencyComponentUpdater,AutofillServerCommunication,InterestFeedContentSuggestions"
)


def _only_loopback() -> list[str]:
    """The network interfaces this process sees that are not loopback (none in the namespace)."""
    return [name for _, name in socket.if_nameindex() if name != "lo"]


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """One Chromium for every case: starting it is most of a case's time. Each case then
    starts from no cookies and a blank page (see :func:`browser`)."""
    others = _only_loopback()
    assert others == [], (
        f"the browser cases run only in a loopback-only network namespace, but {others} are "
        "visible; run tests/ui/test_ui_browser.py, which starts them under `unshare -n`"
    )
    # Selenium Manager must never fetch a driver.
    previous = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-extensions", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--window-size=1280,1000",
        "--no-pings", "--disable-domain-reliability", "--dns-prefetch-disable",
        "--disable-client-side-phishing-detection", "--disable-default-apps",
        f"--disable-features={_QUIET_FEATURES}",
        # Nothing beyond loopback: names do not resolve and any other address goes to a dead
        # proxy (loopback bypasses a proxy by default).
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
    ):  # fmt: skip
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    finally:
        if previous is None:
            os.environ.pop("SE_OFFLINE", None)
        else:
            os.environ["SE_OFFLINE"] = previous
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(chromium: WebDriver) -> WebDriver:
    """The shared Chromium, with no cookies from an earlier case (a cookie ignores the port, so
    another case's server on 127.0.0.1 would otherwise receive it) and on a blank page."""
    chromium.execute_cdp_cmd("Network.clearBrowserCookies", {})
    chromium.get("about:blank")
    return chromium


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[UiServer, Path]]:
    path = make_ui_store(tmp_path)
    with UiServer(UiData(path, [tmp_path])) as server:
        yield server, path


def _click_to(driver: WebDriver, element_id: str, url_part: str) -> None:
    """Click and wait until the page that follows has loaded (a click does not wait for a
    form's navigation to finish)."""
    driver.find_element(By.ID, element_id).click()
    WebDriverWait(driver, 15).until(expected_conditions.url_contains(url_part))
    WebDriverWait(driver, 15).until(
        lambda d: d.execute_script("return document.readyState") == "complete"
    )


def _shot(driver: WebDriver, name: str) -> None:
    folder = os.environ.get("AM_UI_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, max(800, min(int(height) + 40, 4000)))
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))
        driver.set_window_size(1280, 1000)


def test_find_read_approve_and_reject_in_a_real_browser(
    browser: WebDriver, served: tuple[UiServer, Path]
) -> None:
    server, path = served
    browser.get(server.login_url)
    assert browser.current_url == server.url + "/"
    assert browser.find_element(By.TAG_NAME, "h1").text == "Lessons"
    _shot(browser, "01-lessons")

    # Find a lesson by searching its title, open it, read its revision diff.
    box = browser.find_element(By.ID, "q")
    box.send_keys("harness environment")
    _click_to(browser, "search", "q=harness")
    links = browser.find_elements(By.CLASS_NAME, "lesson-link")
    assert [link.text for link in links] == [G1_NEW_TITLE]
    links[0].click()
    WebDriverWait(browser, 15).until(expected_conditions.url_contains(f"/lesson/{G1}"))
    assert browser.find_element(By.ID, "lesson-title").text == G1_NEW_TITLE
    card = browser.find_element(By.ID, "card").text
    assert card.startswith("<active_memory>")
    assert f"[{G1}@2] {G1_NEW_TITLE}" in card
    revision = browser.find_element(By.ID, "revision-2")
    removed = [e.text for e in revision.find_elements(By.CSS_SELECTOR, "pre.diff .del")]
    added = [e.text for e in revision.find_elements(By.CSS_SELECTOR, "pre.diff .add")]
    assert removed == ["-title: Check the harness environment first"]
    assert added == [f"+title: {G1_NEW_TITLE}"]
    assert "keep" in browser.find_element(By.ID, "decisions").text
    _shot(browser, "02-lesson")

    # Approve one quarantined proposal: it becomes live, in the page and in the store.
    _click_to(browser, "nav-quarantine", "/quarantine")
    assert len(browser.find_elements(By.CSS_SELECTOR, "article.held")) == 2
    _shot(browser, "03-quarantine")
    _click_to(browser, f"approve-{HELD_OK}", "approved=")
    assert browser.find_element(By.ID, "notice").text == (f"approved {HELD_OK}: live at revision 1")
    assert HELD_OK in live_ids(path)
    browser.get(f"{server.url}/lesson/{HELD_OK}")
    first = browser.find_element(By.ID, "revision-1").text
    assert "via review" in first
    assert "Held in quarantine after run run-ui for instructions:download_not_run" in first
    browser.get(server.url + "/?q=wheel")
    assert [e.text for e in browser.find_elements(By.CLASS_NAME, "lesson-link")] == [
        "Pin the wheel cache before a release"
    ]

    # Reject the other: gone from the quarantine, never live.
    _click_to(browser, "nav-quarantine", "/quarantine")
    _click_to(browser, f"reject-{HELD_NO}", "rejected=")
    assert "rejected" in browser.find_element(By.ID, "notice").text
    assert browser.find_elements(By.ID, "empty")
    with Quarantine(path, read_only=True) as quarantine:
        assert quarantine.entries() == ()
    assert HELD_NO not in live_ids(path)

    _click_to(browser, "nav-runs", "/runs")
    assert len(browser.find_elements(By.CSS_SELECTOR, "article.run")) == 3
    # Five rejections on three days: one bar segment per (day, stage).
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart rect")) == 5
    _shot(browser, "04-runs")


def test_a_markup_title_renders_inert(browser: WebDriver, served: tuple[UiServer, Path]) -> None:
    server, _ = served
    browser.get(server.login_url)
    browser.get(f"{server.url}/lesson/{HOSTILE}")
    assert browser.find_element(By.ID, "lesson-title").text == HOSTILE_TITLE
    assert browser.find_elements(By.TAG_NAME, "script") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    _shot(browser, "05-hostile")


def test_the_printed_link_works_once(browser: WebDriver, served: tuple[UiServer, Path]) -> None:
    server, _ = served
    browser.get(server.login_url)
    browser.delete_all_cookies()
    browser.get(server.login_url)
    assert "already used" in browser.find_element(By.ID, "error").text
    browser.get(server.url + "/")
    assert "no session" in browser.find_element(By.ID, "error").text


@pytest.fixture
def team_database(request: pytest.FixtureRequest) -> str:
    """The outer test's PostgreSQL database, or this process's own throwaway one."""
    return OUTER_DATABASE or str(request.getfixturevalue("pg_database"))


def test_a_team_stores_quarantine_in_a_real_browser(browser: WebDriver, team_database: str) -> None:
    """The page over a PostgreSQL tenant (``ui --store postgresql://…``): its held proposal is
    listed and approved from the page, and is then live in the tenant's schema."""
    held = QuarantineEntry(HELD_OK, "run-team", "repository_discovery",
                           ("instructions:download_not_run",),
                           make_draft("Pin the wheel cache in the team store"), "")  # fmt: skip
    with PostgresStore(team_database, tenant="browser", pool_size=2) as store:
        store.hold([held])
        with UiServer(UiData(None, [], remote=store)) as server:
            browser.get(server.login_url)
            _click_to(browser, "nav-quarantine", "/quarantine")
            articles = browser.find_elements(By.CSS_SELECTOR, "article.held")
            assert [a.get_attribute("id") for a in articles] == [f"held-{HELD_OK}"]
            _shot(browser, "05-team-quarantine")
            _click_to(browser, f"approve-{HELD_OK}", "approved=")
            notice = browser.find_element(By.ID, "notice").text
            assert notice == f"approved {HELD_OK}: live at revision 1"
            assert browser.find_elements(By.ID, "empty")
        assert store.held() == ()
        assert store.get(HELD_OK).title == "Pin the wheel cache in the team store"
