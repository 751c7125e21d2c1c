"""The lessons page searches titles and recommendations, sorts, shows retired lessons, and
links lessons, runs and quarantine entries both ways; its row counts are the ledger's."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from active_memory.ledger import ledgers
from active_memory.store.sqlite import SqliteStore
from active_memory.ui import UiData, UiServer
from ledger.ledger_kit import G1, R1, R2
from ui.ui_kit import HELD_OK, HOSTILE, make_ui_store

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("browse")
    return make_ui_store(folder), folder


@pytest.fixture(scope="module")
def client(built: tuple[Path, Path]) -> Iterator[httpx.Client]:
    path, folder = built
    with UiServer(UiData(path, [folder])) as server:
        opened = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        assert opened.get(server.login_url.removeprefix(server.url)).status_code == 200
        yield opened
        opened.close()


def _listed(page: httpx.Response) -> list[str]:
    return re.findall(r'class="lesson-link" href="/lesson/([^"]+)"', page.text)


def test_the_search_finds_words_of_recommendations_as_prefixes(client: httpx.Client) -> None:
    page = client.get("/?q=SETTINGS+load")  # HOSTILE's recommendation: "Read the settings loader"
    assert _listed(page) == [HOSTILE]
    assert "1 lesson matching “SETTINGS load”" in html.unescape(page.text)
    assert _listed(client.get("/?q=settings+harness")) == []
    assert 'id="search-note"' not in page.text  # this SQLite has FTS5


@pytest.mark.parametrize(
    ("query", "problem"),
    [("*", "give at least one word (letters or digits)"),
     ("+".join(["load"] * 17), "give at most 16 words (this search has 17)")],
)  # fmt: skip
def test_a_search_the_cli_refuses_is_refused_in_the_page(
    client: httpx.Client, query: str, problem: str
) -> None:
    page = client.get(f"/?q={query}")
    assert page.status_code == 400
    assert f'id="search-problem">The search was not run: {problem}.' in html.unescape(page.text)
    assert "matching" not in page.text


def test_the_order_menu_sorts_the_list_and_the_pager_keeps_it(client: httpx.Client) -> None:
    oldest = _listed(client.get("/"))
    assert oldest == sorted(oldest)
    newest = client.get("/?sort=newest")
    assert _listed(newest) == oldest[::-1]
    assert '<option value="newest" selected>' in newest.text
    revised = _listed(client.get("/?sort=revised"))
    assert revised[0] == G1  # the one lesson at revision 2
    assert _listed(client.get("/?sort=nonsense")) == oldest


def test_the_retired_view_lists_retired_ids_with_their_last_titles(client: httpx.Client) -> None:
    index = client.get("/")
    assert 'href="/retired"' in index.text
    retired = client.get("/retired")
    assert retired.status_code == 200
    assert _listed(retired) == [R1]  # the second run retired it
    assert "Conftest clears only APP_ variables" in retired.text
    assert "1 retired lesson, newest first" in retired.text
    assert "retired" in client.get(f"/lesson/{R1}").text


def test_lessons_runs_and_quarantine_entries_link_both_ways(client: httpx.Client) -> None:
    lesson = client.get(f"/lesson/{R2}").text
    run_links = re.findall(r'href="/runs#run-([^"]+)"', lesson)
    assert len(run_links) == 2  # the second and third runs delivered it
    runs = client.get("/runs").text
    for run_id in run_links:
        article = runs[runs.index(f'id="run-{run_id}"') :]
        article = article[: article.index("</article>")]
        assert f'href="/lesson/{R2}"' in article  # the run names the lessons it delivered
    quarantine = client.get("/quarantine").text
    assert f'href="/lesson/{HELD_OK}"' in quarantine
    held = client.get(f"/lesson/{HELD_OK}").text
    assert f'href="/quarantine#held-{HELD_OK}"' in held


def test_a_rows_counts_are_its_ledgers(built: tuple[Path, Path]) -> None:
    path, folder = built
    data = UiData(path, [folder])
    page, _, _ = data.lessons(repository=None, graph=None, query=None)
    shown = [row.lesson.id for row in page.rows]
    assert shown == sorted([G1, R2, HOSTILE])
    with SqliteStore(path, read_only=True) as store:
        wanted = {x.id: x for x in ledgers(store, data.sources(), ids=shown)}
    for row in page.rows:
        ledger = wanted[row.lesson.id]
        assert row.reach.delivered == ledger.delivered + ledger.standalone.deliveries
        assert row.reach.runs == tuple(run.run_id for run in ledger.runs)
        assert row.reach.outcomes == ledger.outcomes
    assert any(row.reach.delivered for row in page.rows)
