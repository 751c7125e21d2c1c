"""The Learning page lists what ``learn status`` lists: each session's state, reason and the
lessons it changed, as text (a session path or reason is never markup)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from active_memory.learn import session_end
from active_memory.learn.folder import LessonTouched, SessionState, learn_folder, learn_status
from active_memory.ui import UiData, UiServer
from ui.ui_kit import make_ui_store

pytestmark = pytest.mark.timeout(120)


def test_the_learning_page_shows_every_session_with_its_reason_and_lessons(
    tmp_path: Path,
) -> None:
    path = make_ui_store(tmp_path)
    folder = learn_folder(path)
    folder.make()
    done_file = tmp_path / "done.jsonl"
    session_end.write_entry(str(folder.path), "claude", str(done_file), {})
    [(key, entry)] = folder.take_queue()
    assert entry is not None
    base = SessionState(key=key, state="queued", queued_ms=1, updated_ms=1,
                        **entry.model_dump(exclude={"queued_ms"}))  # fmt: skip
    lesson = LessonTouched(id="lesson-01JX0000000000000000000001", op="upsert")
    folder.put(base, state="done", lessons=(lesson,))
    session_end.write_entry(str(folder.path), "codex", "/s/<b>odd</b>.jsonl", {})
    assert [s.state for s in learn_status(folder)] == ["queued", "done"]  # newest first
    with UiServer(UiData(path, [tmp_path])) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
        page = client.get("/learn").text
        client.close()
    rows = re.findall(r'<tr class="session" id="session-([0-9a-f]+)">(.*?)</tr>', page)
    assert len(rows) == 2
    states = {key: re.findall(r'<span class="tag [a-z]+">([a-z]+)</span>', row)
              for key, row in rows}  # fmt: skip
    assert states[key] == ["done"]
    assert f'href="/lesson/{lesson.id}"' in dict(rows)[key]
    assert "&lt;b&gt;odd&lt;/b&gt;" in page
    assert "<b>odd</b>" not in page
    assert 'id="nav-learn"' in page


def test_with_nothing_queued_the_page_says_how_sessions_get_there(tmp_path: Path) -> None:
    path = make_ui_store(tmp_path)
    with UiServer(UiData(path, [tmp_path])) as server:
        client = httpx.Client(base_url=server.url, follow_redirects=True, timeout=60)
        assert client.get(server.login_url.removeprefix(server.url)).status_code == 200
        page = client.get("/learn").text
        client.close()
    assert "No session queued yet" in page
