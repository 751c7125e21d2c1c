"""A large store is paged: the lessons page sends at most LESSONS_PER_PAGE rows, counts every
match, and its previous/next links keep the filters."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from active_memory.models.changes import Mutation, Publication
from active_memory.models.ids import new_lesson_id
from active_memory.store.listing import ListedLesson
from active_memory.store.sqlite import SqliteStore
from active_memory.ui import UiData, UiServer
from active_memory.ui.views import LESSONS_PER_PAGE, scope_label
from ledger.ledger_kit import R2
from postmortem.postmortem_kit import store_at
from ui.ui_kit import _draft, make_ui_store

pytestmark = pytest.mark.timeout(120)


def _links(page: httpx.Response) -> int:
    return page.text.count('class="lesson-link"')


def test_a_store_of_hundreds_is_paged_and_the_links_keep_the_search(tmp_path: Path) -> None:
    path = make_ui_store(tmp_path)
    with store_at(tmp_path) as store:
        for batch in range(3):
            drafts = (_draft(f"Bulk lesson {batch}-{i}") for i in range(100))
            mutations = tuple(
                Mutation(op="upsert", id=new_lesson_id(), expected_revision=0, draft=draft)
                for draft in drafts
            )
            store.publish(Publication(run_id=f"run-bulk-{batch}", mutations=mutations))
    assert LESSONS_PER_PAGE == 100
    with UiServer(UiData(path, [tmp_path])) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
        first = client.get("/")
        assert _links(first) == 100
        assert "303 lessons; showing 1–100" in first.text
        assert "page 1 of 4" in first.text
        assert 'id="prev-page"' not in first.text
        searched = client.get("/?q=bulk&page=3")
        assert _links(searched) == 100
        assert "300 lessons matching “bulk”; showing 201–300" in searched.text
        found = re.search(r'id="next-page" href="([^"]+)"', searched.text)
        assert found is None  # page 3 of 3
        back = re.search(r'id="prev-page" href="([^"]+)"', searched.text)
        assert back is not None
        assert back.group(1).replace("&amp;", "&") == "/?q=bulk&page=2"
        last = client.get("/?page=999")  # beyond the end: the last page
        assert _links(last) == 3
        assert "page 4 of 4" in last.text
        for junk in ("x", "-1", "0", "9" * 40):
            assert _links(client.get(f"/?page={junk}")) == 100, junk
        client.close()


def test_the_lessons_page_of_a_local_store_decodes_only_its_own_lessons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_ui_store(tmp_path)
    with store_at(tmp_path) as store:
        mutations = tuple(
            Mutation(op="upsert", id=new_lesson_id(), expected_revision=0,
                     draft=_draft(f"Paged lesson {i}"))
            for i in range(LESSONS_PER_PAGE + 20)
        )  # fmt: skip
        store.publish(Publication(run_id="run-paged", mutations=mutations))
        every = store.list_lessons()

    def whole_store(*args: object, **kwargs: object) -> None:
        raise AssertionError("the lessons page read the whole store")

    monkeypatch.setattr(SqliteStore, "list_lessons", whole_store)
    data = UiData(path, [tmp_path])
    first, repositories, _ = data.lessons(repository=None, graph=None, query=None, page=1)
    second, _, _ = data.lessons(repository=None, graph=None, query="PAGED", page=2)
    assert [row.lesson for row in first.rows] == [ListedLesson.of(x) for x in every[:100]]
    assert (first.total, first.pages, second.total, second.page) == (len(every), 2, 120, 2)
    assert len(second.rows) == 20
    assert sum(repositories.values()) == sum(1 for x in every if x.scope.repository)
    assert [row.label for row in first.rows] == [scope_label(x.scope) for x in every[:100]]


def test_the_runs_page_counts_each_specialists_decisions(tmp_path: Path) -> None:
    """A postmortem whose specialists only kept lessons is not a run where nothing happened:
    the first recorded run kept G1 (graph) and R1 and R2 (repository)."""
    path = make_ui_store(tmp_path)
    with UiServer(UiData(path, [tmp_path])) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
        runs = client.get("/runs").text
        client.close()
    first = runs[runs.index('id="run-run-20250601-retry-and-review"') :]
    first = first[: first.index("</article>")]
    rows = {
        cells[0]: cells[1:6]
        for cells in (
            re.findall(r"<td>([^<]*)</td>", row)
            for row in re.findall(r'<tr class="specialist">(.*?)</tr>', first)
        )
    }
    # status, then keep, adapt, retire, defer
    assert rows["graph_maintenance"] == ["nothing_to_do", "1", "0", "0", "0"]
    assert rows["repository_maintenance"] == ["nothing_to_do", "2", "0", "0", "0"]


def test_a_run_that_delivered_cards_without_a_postmortem_has_its_anchor(tmp_path: Path) -> None:
    """A lesson page links to every run that delivered it: one whose postmortem is not found
    still has its place on the runs page, so the link is not dead."""
    path = make_ui_store(tmp_path)
    (tmp_path / "third" / "report.json").unlink()
    log = tmp_path / "third" / "run-log.jsonl"
    kept = [
        line
        for line in log.read_text(encoding="utf-8").splitlines()
        if not json.loads(line).get("event", "").startswith("postmortem")
    ]
    log.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    with UiServer(UiData(path, [tmp_path])) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
        lesson = client.get(f"/lesson/{R2}").text
        runs = client.get("/runs").text
        client.close()
    linked = re.findall(r'href="/runs#run-([^"]+)"', lesson)
    assert len(linked) == 2  # the second and third runs delivered it
    for run_id in linked:
        assert f'id="run-{run_id}"' in runs
    unreviewed = json.loads((tmp_path / "third" / "run.json").read_text(encoding="utf-8"))
    assert unreviewed["run_id"] in linked
    third = runs[runs.index(f'id="run-{unreviewed["run_id"]}"') :]
    third = third[: third.index("</article>")]
    assert "no postmortem" in third
    assert f'href="/lesson/{R2}"' in third
