"""The browser tests, run in a network namespace that has only loopback.

Headless Chromium probes the network on its own (under strace it aimed a UDP socket at
2001:4860:4860::8888, its IPv6 reachability check) whatever flags it is given, and nothing a test
runs may aim at an address beyond loopback. So the cases in :mod:`ui.browser_cases` (the UI
server, Selenium, chromedriver and Chromium, all in one pytest process) run under
``unshare -n``, with ``lo`` brought up and no other interface: there is no route off the machine
to take. Where a new network namespace is not permitted (not root, no user namespaces) the tests
skip with that reason; they never fall back to the host's network."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pg_cluster

pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

CASES = Path(__file__).with_name("browser_cases.py")
REPO = Path(__file__).resolve().parents[2]
UNSHARE = shutil.which("unshare")
IP = shutil.which("ip") or ("/usr/sbin/ip" if os.path.exists("/usr/sbin/ip") else None)
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not (os.path.exists(CHROMEDRIVER) and os.path.exists(CHROMIUM)):
    pytest.skip(
        "chromium and chromedriver are not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )


def _namespace_command() -> list[str]:
    """The prefix that runs a command with loopback only; skips the module when it cannot."""
    if UNSHARE is None:
        pytest.skip("unshare (util-linux) is not installed: no loopback-only namespace")
    if IP is None:
        pytest.skip("ip (iproute2) is not installed: cannot bring up lo in a new namespace")
    probe = subprocess.run(
        [UNSHARE, "-n", IP, "link", "set", "lo", "up"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if probe.returncode != 0:
        pytest.skip(
            "a loopback-only network namespace is not permitted here (unshare -n: "
            f"{probe.stderr.strip()[:200] or probe.returncode}); the browser tests never use "
            "the host's network"
        )
    return [UNSHARE, "-n", "sh", "-c", f'"{IP}" link set lo up && exec "$0" "$@"']


@pytest.mark.timeout(420)
@pytest.mark.slow
def test_the_browser_cases_pass_with_loopback_only(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Slow: a real headless Chromium, in a network namespace of its own, goes through every
    browser case. Its temporary folders stay in this test's (see tests/inner_pytest.py); its
    team store case uses this process's PostgreSQL database (see ``ui.browser_cases``)."""
    env = dict(os.environ)
    if pg_cluster.unavailable() is None:
        env["AM_BROWSER_PG_URL"] = request.getfixturevalue("pg_database")
    command = [
        *_namespace_command(),
        sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
        f"--basetemp={tmp_path / 'basetemp'}", str(CASES),
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=400, check=False
    )
    report = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    summary = done.stdout.strip().splitlines()[-1]
    expected = len(re.findall(r"^def test_", CASES.read_text(), flags=re.MULTILINE))
    # Every case ran and passed: none skipped, none deselected.
    assert re.fullmatch(rf"{expected} passed in .*", summary), report


def test_a_refused_namespace_skips_rather_than_using_the_host_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where ``unshare -n`` is refused (here: a stand-in that always fails), the browser test
    skips with that reason; it never runs the cases on the host's network."""
    monkeypatch.setattr(sys.modules[__name__], "UNSHARE", shutil.which("false") or "/bin/false")
    with pytest.raises(pytest.skip.Exception, match="loopback-only network namespace is not"):
        _namespace_command()
    monkeypatch.setattr(sys.modules[__name__], "IP", None)
    with pytest.raises(pytest.skip.Exception, match="iproute2"):
        _namespace_command()
