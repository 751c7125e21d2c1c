"""LangGraph as its docs draw an agent: a model node, a top-level ``ToolNode`` after it
(``tools_condition``) and back. Two such agents share one message history: ``implement`` (a
worker) reads and edits the file, ``review`` (a verifier) reads it and rejects once.

The tool nodes are no agents: the receipts and cards of their calls belong to the agent whose
model asked for the call, and a card the shared history already holds is not handed over again
in another node's conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from active_memory.integrations.langgraph import (
    LangGraphMemory,
    awrap_tool_call,
    langgraph_graph,
    node_prompt,
    wrap_tool_call,
)
from active_memory.models.changes import Mutation, Publication
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope
from active_memory.models.runs import Binding
from active_memory.store.sqlite import SqliteStore
from integrations.kit import (
    LESSON_ID,
    REPOSITORY,
    ROLES,
    TARGET,
    TITLE,
    Bench,
    card_text,
    first_answers,
    lesson_ids,
    make_checkout,
    shown,
)

BINDING = Binding(provider="openai", model="gpt-5.1-mini")


def _call(name: str, call_id: str, **args: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _implement_script() -> list[AIMessage]:
    edit = {"old": "pass", "new": "self._buffer.clear()"}
    return [
        _call("read_file", "implement-read", path=TARGET),
        _call("edit_file", "implement-edit", path=TARGET, **edit),
        AIMessage("Done."),
        _call("edit_file", "implement-fix", path=TARGET, old="clear()", new="clear()  # flushed"),
        AIMessage("Flushed before asserting."),
    ]


def _review_script() -> list[AIMessage]:
    return [
        _call("read_file", "review-read", path=TARGET),
        AIMessage("Rejected: the test asserts before flush()."),
        AIMessage("Approved."),
    ]


class FlatGraph:
    """Two agents, each a model node with a top-level ToolNode, as LangGraph's docs build one;
    the review routes back to implement when it rejects."""

    def __init__(self, checkout: Path) -> None:
        @tool
        def read_file(path: str) -> str:
            """Read a file of the checkout."""
            return (checkout / path).read_text(encoding="utf-8")

        @tool
        def edit_file(path: str, old: str, new: str) -> str:
            """Replace text in a file of the checkout."""
            file = checkout / path
            file.write_text(file.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
            return f"edited {path}"

        self.models = {"implement": FakeMessagesListChatModel(responses=_implement_script()),
                       "review": FakeMessagesListChatModel(responses=_review_script())}  # fmt: skip
        self.seen: dict[str, list[list[Any]]] = {node: [] for node in ROLES}
        wrappers = {"wrap_tool_call": wrap_tool_call, "awrap_tool_call": awrap_tool_call}
        builder = StateGraph(MessagesState)
        builder.add_node("implement", self._model("implement"))
        builder.add_node("implement_tools", ToolNode([read_file, edit_file], **wrappers))
        builder.add_node("review", self._model("review"))
        builder.add_node("review_tools", ToolNode([read_file], **wrappers))
        builder.add_edge(START, "implement")
        builder.add_conditional_edges("implement", tools_condition,
                                      {"tools": "implement_tools", END: "review"})  # fmt: skip
        builder.add_edge("implement_tools", "implement")
        builder.add_conditional_edges("review", self._after_review,
                                      ["review_tools", "implement", END])  # fmt: skip
        builder.add_edge("review_tools", "review")
        self.app = builder.compile(checkpointer=InMemorySaver())

    def _model(self, node: str) -> Any:
        def call_model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            system = SystemMessage(node_prompt(f"You {node} the change.", config))
            self.seen[node].append([system, *state["messages"]])
            return {"messages": [self.models[node].invoke(self.seen[node][-1])]}

        return call_model

    @staticmethod
    def _after_review(state: MessagesState) -> str:
        last = state["messages"][-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            return "review_tools"
        return "implement" if str(last.content).startswith("Rejected") else END


def _seed(store: SqliteStore) -> None:
    draft = LessonDraft(
        scope=RepositoryScope(repository=REPOSITORY, files=(TARGET,)),
        title=TITLE,
        recommendation="Writes stay buffered until flush() or close().",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen before"),
    )
    store.publish(Publication(run_id="seed", mutations=(
        Mutation(op="upsert", id=LESSON_ID, expected_revision=0, draft=draft),)))  # fmt: skip


def _cards_in(messages: list[Any]) -> int:
    return sum(str(message.content).count(card_text()) for message in messages)


@pytest.mark.parametrize("streaming", ["sync", "async"])
async def test_receipts_and_cards_of_a_tool_node_belong_to_the_agent_that_asked(
    tmp_path: Path, streaming: str
) -> None:
    checkout = make_checkout(tmp_path)
    flat = FlatGraph(checkout)
    graph = langgraph_graph(flat.app, ROLES, BINDING)
    assert {(n.id, n.kind) for n in graph.nodes} == {
        ("implement", "worker"), ("implement_tools", "tool"),
        ("review", "verifier"), ("review_tools", "tool")}  # fmt: skip
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        _seed(store)
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph)
            config: RunnableConfig = {"configurable": {"thread_id": "t"}}
            inputs = {"messages": [HumanMessage("Make the test flush.")]}
            if streaming == "sync":
                list(memory.stream(flat.app, inputs, config))
            else:
                [chunk async for chunk in memory.astream(flat.app, inputs, config)]
            executions = {e.id: e for e in memory.recorder.executions}
            agents = [e for e in memory.recorder.executions if e.node_id in ROLES]
            assert [(e.node_id, e.occurrence, e.status) for e in agents] == [
                ("implement", 1, "completed"), ("implement", 2, "completed"),
                ("implement", 3, "completed"), ("review", 1, "completed"),
                ("review", 2, "completed"), ("implement", 4, "completed"),
                ("implement", 5, "completed"), ("review", 3, "completed")]  # fmt: skip
            # Each call is the receipt of the model call that asked for it, never a tool node's.
            assert [(r.tool, executions[r.execution].node_id, r.execution) for r in run.receipts
                    if r.execution] == [
                ("read_file", "implement", agents[0].id), ("edit_file", "implement", agents[1].id),
                ("read_file", "review", agents[3].id), ("edit_file", "implement", agents[5].id),
            ]  # fmt: skip
            assert len(run.receipts) == 4
            # The card went to the implement conversation once; review, reading the same file
            # over the shared history, finds it there and is not handed a second copy.
            assert [(d.lesson_id, d.node_id, d.execution, d.conversation_id)
                    for d in run.deliveries] == [
                (LESSON_ID, "implement", agents[0].id, "t/implement")]  # fmt: skip
            assert all(_cards_in(seen) <= 1 for node in ROLES for seen in flat.seen[node])
            assert _cards_in(flat.seen["review"][-1]) == 1
            # The asking agent's transcript holds the result, labelled with its receipt.
            transcript = agents[0].transcript
            lines = [json.loads(line) for line in transcript.read_text("utf-8").splitlines()]
            read = next(line for line in lines if line["role"] == "tool")
            assert (read["tool"], read["receipt"]) == ("read_file", run.receipts[0].seq)
            assert read["text"].startswith("class BlobWriter")
            assert card_text() in read["text"]


async def test_a_lesson_citing_a_tool_node_call_is_admitted(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path)
    flat = FlatGraph(checkout)
    graph = langgraph_graph(flat.app, ROLES, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph)
            list(memory.stream(flat.app, {"messages": [HumanMessage("Make the test flush.")]},
                               {"configurable": {"thread_id": "t"}}))  # fmt: skip
            read = run.receipts[0]
            implement = memory.recorder.executions[0]
            assert (read.tool, read.paths, read.execution) == ("read_file", (TARGET,), implement.id)
            provider = first_answers(implement.id, citation=f"receipt:{read.seq}")
            report = await memory.settle("succeeded", provider=provider, new_id=lesson_ids())
        assert report.status == "completed", report
        assert [change.id for change in report.changes] == [LESSON_ID]
        # The evidence labels the implement node's read with the receipt it cites.
        assert f"receipt:{read.seq}" in shown(provider, "repository_discovery")
