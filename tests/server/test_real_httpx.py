"""RemoteBackend through the HTTP client the ``remote`` extra installs.

A host talks to the service through ``http.client`` (every service test runs that), and through
httpx when its environment names a proxy. The test suite aliases ``httpx`` to ``httpx2``
(``tests/conftest.py``), so in-process tests never run that way on the real httpx; this one runs
RemoteBackend in a subprocess that imports the real ``httpx``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from active_memory.server import RunningService
from factories import REPOSITORY

CLIENT = Path(__file__).with_name("real_httpx_client.py")
ROOT = Path(__file__).resolve().parents[2]


def test_a_remote_backend_on_real_httpx_snapshots_publishes_and_is_refused(
    running: RunningService, tenant: str
) -> None:
    token = running.service.credentials.create(tenant=tenant, repository=REPOSITORY).token
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
    done = subprocess.run(
        [sys.executable, str(CLIENT), running.url, token],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["httpx"] == "httpx"
    assert "httpx2" not in outcome["httpx_file"]
    assert outcome["published"] == 1
    assert outcome["snapshot"] is True
    ((_, expected, found),) = outcome["conflict"]
    assert (expected, found) == (0, 1)
    assert "refused" in outcome["unauthorized"]
