"""``active-memory mcp`` as a client sees it: a real subprocess, the SDK's client, stdio.

Tests that only read, on the served checkout, share one server (``hosted``), each in a
conversation of its own so that what one was delivered cannot hide a card from another;
those about a session's default conversation, a new session, another working folder or
arguments, or what the process leaves on disk start a fresh one (``served``). The two about a
store changed before or while serving ask the same tools in this process (``local_session``):
what they check is the answer, which the wire carries unchanged in every other test here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import NamedTuple

import pytest
import pytest_asyncio
from mcp import Client

from active_memory.recall.render import render
from factories import tree_digest
from mcp_server.kit import (
    EVIDENCE,
    GRAPH,
    Served,
    adapt,
    hold_session,
    local_session,
    mcp_session,
    serve_fixture,
    served_lessons,
    text_of,
)
from recall.kit import REPOSITORY, lesson_id

CONFIG = "src/widgets/config.py"
# The shared server's tests and this module's fresh ones run on one event loop, the one that
# the shared client's session lives on.
pytestmark = pytest.mark.asyncio(loop_scope="module")
HOSTED_TIMEOUT_S = 600  # the shared session outlives a test; each request keeps its own bound


@pytest.fixture
def served(tmp_path: Path) -> Served:
    return serve_fixture(tmp_path)


class Hosted(NamedTuple):
    served: Served
    client: Client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hosted(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Hosted]:
    """One server on a served checkout, shared by the tests that only read from it."""
    served = serve_fixture(tmp_path_factory.mktemp("hosted"))
    client, close = await hold_session(served, timeout_s=HOSTED_TIMEOUT_S)
    yield Hosted(served, client)
    await close()


def delivered(result: object) -> list[str]:
    report = result.structured_content["report"]  # type: ignore[attr-defined]
    return [f"{card['id']}@{card['revision']}" for card in report["cards"]
            if card["outcome"] == "delivered"]  # fmt: skip


async def test_the_server_lists_three_read_only_tools(hosted: Hosted) -> None:
    client = hosted.client
    listed = (await client.list_tools()).tools
    assert [tool.name for tool in listed] == ["recall", "explain", "list"]
    assert all(tool.annotations and tool.annotations.read_only_hint for tool in listed)
    recall = listed[0].input_schema
    assert recall["required"] == ["kind", "value"]
    assert recall["additionalProperties"] is False


async def test_recall_delivers_a_lesson_once_per_conversation(served: Served) -> None:
    key = f"{lesson_id(1)}@1"
    async with mcp_session(served) as client:
        first = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
        again = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
        absolute = await client.call_tool(
            "recall", {"kind": "file", "value": str(served.workspace / CONFIG)}
        )
        named = await client.call_tool(
            "recall", {"kind": "file", "value": CONFIG, "conversation": "chat-2"}
        )
    assert not first.is_error
    assert delivered(first) == [key]
    assert text_of(first).startswith("<active_memory>\n")
    assert f"[{key}] Config loads lazily" in text_of(first)
    assert first.structured_content["repository"] == REPOSITORY  # type: ignore[index]
    for repeated in (again, absolute):
        assert delivered(repeated) == []
        assert text_of(repeated).startswith("Nothing new for the file ")
        assert f"1 already delivered in this conversation ({key})" in text_of(repeated)
        assert "<active_memory>" not in text_of(repeated)
    assert delivered(named) == [key]  # another conversation, same session
    async with mcp_session(served) as client:
        fresh = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
    assert delivered(fresh) == [key]  # a new session is a new conversation


async def test_recall_frames_cards_exactly_as_the_hooks_do(hosted: Hosted) -> None:
    lessons = {item.id: item for item in served_lessons()}
    client = hosted.client
    result = await client.call_tool(
        "recall",
        {
            "kind": "command",
            "value": "grep -rn configure_bedrock src/widgets/storage",
            "conversation": "frames",
        },
    )
    assert delivered(result) == [f"{lesson_id(2)}@1", f"{lesson_id(3)}@1"]
    expected = render((lessons[lesson_id(2)], lessons[lesson_id(3)]), budget_bytes=32_000)
    assert text_of(result) == expected.text


async def test_recall_for_a_folder_and_an_identifier(hosted: Hosted) -> None:
    client = hosted.client
    folder = await client.call_tool(
        "recall", {"kind": "folder", "value": "tests/unit", "conversation": "folder"}
    )
    identifier = await client.call_tool(
        "recall", {"kind": "identifier", "value": "configure_bedrock", "conversation": "folder"}
    )
    assert delivered(folder) == [f"{lesson_id(5)}@1"]
    assert delivered(identifier) == [f"{lesson_id(3)}@1"]
    assert "Other bedrock card" not in text_of(identifier)


async def test_a_path_outside_the_repository_gets_nothing(hosted: Hosted) -> None:
    foreign = hosted.served.other / CONFIG
    client = hosted.client
    asked = [
        {"kind": "file", "value": str(foreign)},
        {"kind": "file", "value": f"../other/{CONFIG}"},
        {"kind": "folder", "value": str(hosted.served.other)},
        {"kind": "command", "value": f"cat {CONFIG}", "cwd": str(hosted.served.other)},
    ]
    # One conversation of this test's own, so the last call shows what the others delivered.
    results = [await client.call_tool("recall", {**request, "conversation": "outside"})
               for request in asked]  # fmt: skip
    inside = await client.call_tool(
        "recall", {"kind": "file", "value": CONFIG, "conversation": "outside"}
    )
    for result in results:
        assert not result.is_error
        text = text_of(result)
        assert text.startswith("Nothing recalled: ")
        assert f"outside the repository at {str(hosted.served.workspace.resolve())!r}" in text
        assert result.structured_content == {  # nothing of the other repository
            "repository": REPOSITORY, "outside": True, "report": None,
            "conversation": result.structured_content["conversation"],  # type: ignore[index]
        }  # fmt: skip
        assert "lesson-" not in text
    # Nothing outside counted as a delivery: the lesson inside is still new.
    assert delivered(inside) == [f"{lesson_id(1)}@1"]


async def test_a_server_started_in_another_checkout_serves_only_that_repository(
    served: Served,
) -> None:
    async with mcp_session(served, cwd=served.other / "src") as client:
        result = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
        listed = await client.call_tool("list", {})
        widgets = await client.call_tool("explain", {"id": lesson_id(1)})
    assert delivered(result) == [f"{lesson_id(11)}@1"]
    ids = [item["id"] for item in listed.structured_content["lessons"]]  # type: ignore[index]
    assert ids == [lesson_id(11), lesson_id(12)]
    assert widgets.is_error
    assert text_of(widgets) == (
        f"explain: no lesson {lesson_id(1)!r} among the lessons of "
        "forge:github.com/acme/other; the list tool shows them"
    )


async def test_explain_returns_the_card_evidence_and_revisions(served: Served) -> None:
    first = served_lessons()[0]
    adapt(served.store, first, run_id="run-9", title="Config loads lazily, once")
    async with local_session(served) as client:
        result = await client.call_tool("explain", {"id": lesson_id(1)})
        unknown = await client.call_tool("explain", {"id": lesson_id(99)})
        foreign = await client.call_tool("explain", {"id": lesson_id(11)})
    assert not result.is_error
    data = result.structured_content
    assert data is not None
    card = render((first.model_copy(update={"revision": 2, "title": "Config loads lazily, once"}),),
                  budget_bytes=64 * 1024).text  # fmt: skip
    assert data["card"] == card
    assert text_of(result).startswith(card + "\n\n<active_memory>\n")
    assert data["evidence"] == {
        "run_id": "run-7",
        "references": ["exec:e3", "receipt:4", "repository:src/widgets/config.py"],
        "reason": EVIDENCE.reason,
        "source_commit": "a" * 40,
    }
    assert "  references: exec:e3, receipt:4, repository:src/widgets/config.py" in text_of(result)
    assert [(r["revision"], r["op"], r["run_id"], r["title"]) for r in data["history"]] == [
        (1, "upsert", "seed", "Config loads lazily"),
        (2, "upsert", "run-9", "Config loads lazily, once"),
    ]
    # Another repository's lesson reads exactly as an unknown id.
    assert unknown.is_error
    assert foreign.is_error
    assert text_of(foreign) == text_of(unknown).replace(lesson_id(99), lesson_id(11))


async def test_list_returns_the_scopes_lessons(hosted: Hosted) -> None:
    client = hosted.client
    repository = await client.call_tool("list", {})
    page = await client.call_tool("list", {"offset": 4, "limit": 10})
    graph = await client.call_tool("list", {"scope": "graph", "graph_hash": GRAPH})
    node = await client.call_tool(
        "list", {"scope": "graph", "graph_hash": GRAPH, "node": "verifier"}
    )

    def ids(result: object) -> list[str]:
        return [item["id"] for item in result.structured_content["lessons"]]  # type: ignore[attr-defined]

    assert ids(repository) == [lesson_id(number) for number in range(1, 7)]
    assert f"Lessons of repository {REPOSITORY}: 1-6 of 6." in text_of(repository)
    assert text_of(repository).startswith("<active_memory>\n")
    assert ids(page) == [lesson_id(5), lesson_id(6)]
    assert ids(graph) == [lesson_id(21), lesson_id(22)]  # not another repository's, nor graph's
    assert ids(node) == [lesson_id(22)]


MALFORMED = [
    ("recall", {"kind": "path", "value": "x"}, "recall: kind: Input should be"),
    ("recall", {"kind": "file"}, "recall: value: is required"),
    ("recall", {"kind": "file", "value": 7}, "recall: value: must be a string"),
    ("recall", {"kind": "file", "value": "a", "extra": 1}, "recall: extra: is not a known"),
    ("recall", {"kind": "identifier", "value": "x" * 200}, "recall: value: is 200 characters"),
    ("recall", {"kind": "command", "value": "y" * 70_000}, "recall: value: String should"),
    ("recall", {"kind": "file", "value": "a\0b"}, "recall: value: holds a NUL character"),
    ("recall", {"kind": "file", "value": "a", "cwd": "/"}, "recall: cwd: applies to a"),
    ("recall", {"kind": "file", "value": "a", "conversation": "a\nb"}, "recall: conversation"),
    ("explain", {"id": "lesson-1"}, "explain: id: 'lesson-1' is not a lesson id"),
    ("explain", {"id": "z" * 100_000}, "explain: id: String should have at most 33"),
    ("explain", {}, "explain: id: is required"),
    ("list", {"scope": "graph"}, "list: graph_hash: is required for the graph scope"),
    ("list", {"limit": 0}, "list: limit: must be at least 1"),
    ("list", {"node": "worker"}, 'list: node: applies to scope "graph" only'),
    ("forget", {}, "no tool 'forget'; the tools are recall, explain, list"),
]


async def test_malformed_input_gets_a_tool_error_and_the_server_keeps_serving(
    hosted: Hosted,
) -> None:
    client = hosted.client
    for name, arguments, problem in MALFORMED:
        refused = await client.call_tool(name, arguments)  # type: ignore[arg-type]
        assert refused.is_error, (name, arguments)
        assert text_of(refused).startswith(problem)
        assert len(text_of(refused)) < 400  # a huge value is never echoed back whole
        assert not (await client.call_tool("list", {})).is_error
    served_after = await client.call_tool(
        "recall", {"kind": "file", "value": CONFIG, "conversation": "malformed"}
    )
    assert delivered(served_after) == [f"{lesson_id(1)}@1"]


async def test_the_server_never_writes_the_store_or_beside_it(served: Served) -> None:
    before = tree_digest(served.store.parent)
    async with mcp_session(served) as client:
        await client.call_tool("recall", {"kind": "file", "value": CONFIG})
        await client.call_tool("explain", {"id": lesson_id(1)})
        await client.call_tool("list", {})
    assert tree_digest(served.store.parent) == before


async def test_a_publication_while_serving_is_recalled_without_a_restart(served: Served) -> None:
    first = served_lessons()[0]
    async with local_session(served) as client:
        before = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
        adapt(served.store, first, run_id="run-9", recommendation="Load it once, at import.")
        after = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
    assert delivered(before) == [f"{lesson_id(1)}@1"]
    assert delivered(after) == [f"{lesson_id(1)}@2"]  # a new revision is delivered again
    assert "Load it once, at import." in text_of(after)


async def test_a_missing_store_is_a_tool_error_naming_it(served: Served, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "lessons.sqlite3"
    async with mcp_session(served, args=["--store", str(missing)]) as client:
        result = await client.call_tool("recall", {"kind": "file", "value": CONFIG})
        listed = await client.call_tool("list", {})
    assert result.is_error
    assert listed.is_error
    assert text_of(result) == (
        f"recall: lesson store {str(missing)!r}: does not exist yet; it is created by the first "
        "write to the store"
    )
    assert not missing.parent.exists()
