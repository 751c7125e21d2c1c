"""The service serves what a ledger needs: the lessons of a credential's scope and their
history, so ``lessons stats --store https://…`` counts the same as against a local store."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import httpx

from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import LessonDraft
from active_memory.server import IssuedToken, RunningService
from active_memory.store.quarantine import QuarantineEntry
from active_memory.store.remote import RemoteBackend
from cli_runner import run_cli
from factories import WEAK_RECOMMENDATION, WEAK_SIGNALS, make_draft, make_graph_draft, publish_new
from fixture_runs import RUNS

Remote = Callable[[str], RemoteBackend]
Issue = Callable[..., IssuedToken]
OTHER = "forge:example.com/acme/other"


def test_lessons_lists_only_the_credential_scope(issue: Issue, remote: Remote) -> None:
    mine = remote(issue().token)
    theirs = remote(issue(repository=OTHER).token)
    ids = publish_new(mine, make_draft("Mine"), make_graph_draft())
    publish_new(theirs, make_draft("Theirs", repository=OTHER))
    assert [lesson.id for lesson in mine.list_lessons()] == ids
    # The graph lesson names no repository: tenant-wide, so the other repository sees it too.
    seen = {lesson.title for lesson in theirs.list_lessons()}
    assert "Theirs" in seen
    assert "Mine" not in seen
    assert len(seen) == 2


def test_lessons_without_a_credential_is_refused(running: RunningService) -> None:
    answer = httpx.get(f"{running.url}/v1/lessons")
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthorized"


def test_lessons_stats_against_the_service(
    issue: Issue, remote: Remote, running: RunningService, tmp_path: Path
) -> None:
    token = issue().token
    backend = remote(token)
    (lesson_id,) = publish_new(backend, make_draft("Served"))
    folder = tmp_path / "runs" / "clean-success"
    shutil.copytree(RUNS / "clean-success", folder, ignore=shutil.ignore_patterns("checkout"))
    run_file = folder / "run.json"
    data = json.loads(run_file.read_text("utf-8"))
    data.pop("checkout", None)
    data["deliveries"] = [
        {"lesson_id": lesson_id, "revision": 1, "node_id": "implement",
         "conversation_id": "conv-implement-1", "channel": "hook",
         "execution": "ex-implement-1", "time_ms": 1748772006000}
    ]  # fmt: skip
    run_file.write_text(json.dumps(data), "utf-8")
    result = run_cli(
        ["lessons", "stats", "--store", running.url, "--runs", str(tmp_path / "runs"), "--json"],
        env={"ACTIVE_MEMORY_SERVICE_TOKEN": token},
    )
    assert result.exit_code == 0, result.output
    (ledger,) = json.loads(result.stdout)
    assert ledger["id"] == lesson_id
    assert ledger["live"]
    assert ledger["delivered"] == 1
    assert ledger["outcomes"] == {"succeeded": 1}
    assert [r["run_id"] for r in ledger["revisions"]] == ["run-1"]


def test_the_browser_reads_the_service_and_its_quarantine(issue: Issue, remote: Remote) -> None:
    from active_memory.ui import UiData, UiServer

    backend = remote(issue().token)
    (lesson_id,) = publish_new(backend, make_draft("Served to the browser"))
    held_id = new_lesson_id()
    backend.hold([QuarantineEntry(held_id, "run-q", "repo-discovery", WEAK_SIGNALS, _held(), "")])
    with UiServer(UiData(None, [], remote=backend)) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True)
        try:
            index = client.get(server.login_url.removeprefix(server.url))
            assert index.status_code == 200
            assert "Served to the browser" in index.text
            page = client.get(f"/lesson/{lesson_id}")
            assert page.status_code == 200
            assert f"[{lesson_id}@1] Served to the browser" in page.text
            held = client.get("/quarantine")
            assert held.status_code == 200
            assert 'id="no-quarantine"' not in held.text
            assert f'id="held-{held_id}"' in held.text
            assert "Held by the service" in held.text
        finally:
            client.close()
    # The service's review queue is the one the page showed: approving publishes through it.
    receipt = remote(issue(review=True).token).approve_held(held_id)
    assert receipt.revisions == {held_id: 1}
    assert backend.held() == ()
    assert backend.get(held_id).title == "Held by the service"


def _held() -> LessonDraft:
    return make_draft("Held by the service", recommendation=WEAK_RECOMMENDATION)


def test_lessons_stats_refusals_against_the_service(
    issue: Issue, remote: Remote, running: RunningService
) -> None:
    token = issue().token
    publish_new(remote(token), make_draft("Served"))
    absent = "lesson-01JWZZ00000000000000000009"
    unknown = run_cli(
        ["lessons", "stats", absent, "--store", running.url],
        env={"ACTIVE_MEMORY_SERVICE_TOKEN": token},
    )
    assert unknown.exit_code == 1
    assert unknown.stdout == ""
    assert f"the memory service at '{running.url}' has no lesson by that id" in unknown.stderr
    tokenless = run_cli(
        ["lessons", "stats", "--store", running.url], env={"ACTIVE_MEMORY_SERVICE_TOKEN": ""}
    )
    assert tokenless.exit_code == 2
    assert "ACTIVE_MEMORY_SERVICE_TOKEN" in tokenless.stderr
    refused = run_cli(
        ["lessons", "stats", "--store", running.url],
        env={"ACTIVE_MEMORY_SERVICE_TOKEN": "amt_wrong"},
    )
    assert refused.exit_code == 1
    assert "the credential was refused" in refused.stderr
    assert "Traceback" not in unknown.output + tokenless.output + refused.output
