"""Refusals a user meets: a proposal approved twice at once (one publication, then a clear
answer), unknown pages and methods (the guarded error page), and error pages that repeat
nothing the request carried."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from active_memory.store.sqlite import SqliteStore
from active_memory.ui import UiData, UiServer
from active_memory.ui.app import CSP
from ledger.ledger_kit import G1
from ui.ui_kit import HELD_NO, HELD_OK, live_ids, make_ui_store

pytestmark = pytest.mark.timeout(60)
MARK = "planted-marker"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[UiServer, Path]]:
    path = make_ui_store(tmp_path)
    with UiServer(UiData(path, [tmp_path])) as server:
        yield server, path


def _session(server: UiServer) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=server.url, follow_redirects=False)
    assert client.get(server.login_url.removeprefix(server.url)).status_code == 303
    found = re.search(r'name="csrf" value="([^"]+)"', client.get("/quarantine").text)
    assert found is not None
    return client, found.group(1)


def test_approving_one_proposal_four_times_at_once_publishes_it_once(
    served: tuple[UiServer, Path],
) -> None:
    server, path = served
    client, csrf = _session(server)
    answers: list[httpx.Response] = []

    def approve() -> None:
        with httpx.Client(base_url=server.url, cookies=client.cookies) as tab:
            answers.append(tab.post(f"/quarantine/{HELD_OK}/approve", data={"csrf": csrf}))

    threads = [threading.Thread(target=approve) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [303, 409, 409, 409]
    for answer in answers:
        if answer.status_code == 409:
            assert f"{HELD_OK} was already approved: it is live at revision 1" in answer.text
            assert "Nothing was published twice" in answer.text
    with SqliteStore(path, read_only=True) as store:
        assert [entry.revision for entry in store.history(HELD_OK)] == [1]
    # Rejecting what was approved says so too, and changes nothing.
    late = client.post(f"/quarantine/{HELD_OK}/reject", data={"csrf": csrf})
    assert late.status_code == 409
    assert "already approved" in late.text
    client.close()


def test_approving_a_rejected_proposal_says_it_was_rejected(
    served: tuple[UiServer, Path],
) -> None:
    server, path = served
    client, csrf = _session(server)
    assert client.post(f"/quarantine/{HELD_NO}/reject", data={"csrf": csrf}).status_code == 303
    late = client.post(f"/quarantine/{HELD_NO}/approve", data={"csrf": csrf})
    assert late.status_code == 409
    assert "already rejected" in late.text
    assert HELD_NO not in live_ids(path)
    client.close()


def test_unknown_pages_and_methods_get_the_guarded_page_and_echo_nothing(
    served: tuple[UiServer, Path],
) -> None:
    server, _ = served
    client, _ = _session(server)
    for method, url, status in (
        ("GET", f"/{MARK}", 404),
        ("GET", f"/quarantine/{HELD_OK}/approve?{MARK}=1", 405),
        ("GET", f"/lesson/{MARK}<b>", 400),
        ("GET", "/lesson/lesson-01JWAZ00000000000000000009", 404),
        ("POST", f"/runs?{MARK}", 405),
    ):
        answer = client.request(method, url)
        assert answer.status_code == status, url
        assert answer.headers["content-security-policy"] == CSP, url
        assert answer.headers["x-frame-options"] == "DENY", url
        assert 'id="error"' in answer.text, url
        assert MARK not in answer.text, url
        assert "01JWAZ00000000000000000009" not in answer.text, url
    client.close()


PLANT = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


def test_report_and_run_log_text_render_inert(tmp_path: Path) -> None:
    """A report and a run log are files anyone with the folder can write: every field the runs
    page and the ledger show (reason, status, specialist, a downgrade's id, a rejection's stage
    and code) is text, in element and attribute alike."""
    import json

    path = make_ui_store(tmp_path)
    folder = tmp_path / "planted"
    folder.mkdir()
    report = {
        "run_id": "run-planted",
        "status": PLANT,
        "reason": PLANT,
        "specialists": [
            {"specialist": PLANT, "status": PLANT, "downgrades": [{"id": PLANT, "action": PLANT}]}
        ],
        "changes": [],
    }
    (folder / "report.json").write_text(json.dumps(report), "utf-8")
    events = [
        {"event": "postmortem", "run_id": "run-planted", "status": PLANT, "outcome": PLANT},
        {"event": "rejection", "run_id": "run-planted", "stage": PLANT, "code": PLANT,
         "role": PLANT, "time_ms": 1748772000000, "id": G1},
        {"event": "postmortem_specialist", "run_id": "run-planted", "role": PLANT,
         "status": PLANT, "error_code": PLANT},
    ]  # fmt: skip
    (folder / "run-log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), "utf-8")
    with UiServer(UiData(path, [tmp_path])) as server:
        client, _ = _session(server)
        for url in ("/runs", f"/lesson/{G1}", "/"):
            page = client.get(url)
            assert page.status_code == 200, url
            assert "<script" not in page.text, url
            assert "<img" not in page.text, url
            # Shown, as text: in an element and inside an attribute (the tag's class).
            if url != "/":
                assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text, url
        assert 'class="tag &#34;&gt;&lt;script&gt;' in client.get("/runs").text
        client.close()
