"""The LangGraph integration, end to end: a compiled two-node graph (each node an agent subgraph
with a model node and a ToolNode), langchain-core's fake chat model, over a real git checkout,
twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph", reason="the langgraph extra is not installed")

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
)
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
from active_memory.models.runs import Binding
from active_memory.store.sqlite import SqliteStore
from integrations.kit import (
    LESSON_ID,
    README,
    ROLES,
    TARGET,
    Bench,
    card_text,
    delivered,
    first_answers,
    lesson_ids,
    make_checkout,
    second_answers,
    shown,
)

BINDING = Binding(provider="openai", model="gpt-5.1-mini")


def _reads(*paths: str, final: str) -> list[AIMessage]:
    calls = [
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": path}, "id": f"call-{n}"}])
        for n, path in enumerate(paths)
    ]
    return [*calls, AIMessage(final)]  # fmt: skip


class Scenario:
    """The compiled graph and the fake models behind its two nodes; the models' scripts are
    replaced for each run (the graph, and so its hash, stays the same)."""

    def __init__(self, checkout: Path) -> None:
        @tool
        def read_file(path: str) -> str:
            """Read a file of the checkout."""
            return (checkout / path).read_text(encoding="utf-8")

        self.models = {node: FakeMessagesListChatModel(responses=[AIMessage("")])
                       for node in ROLES}  # fmt: skip
        self.prompts: dict[str, list[str]] = {node: [] for node in ROLES}
        self.seen: dict[str, list[list[Any]]] = {node: [] for node in ROLES}
        builder = StateGraph(MessagesState)
        for node in ROLES:
            builder.add_node(node, self._agent(node, read_file))
        builder.add_edge(START, "implement")
        builder.add_edge("implement", "review")
        builder.add_edge("review", END)
        self.app = builder.compile(checkpointer=InMemorySaver())

    def _agent(self, node: str, read_file: Any) -> Any:
        def model(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
            system = node_prompt(f"You {node} the change.", config)
            self.prompts[node].append(system)
            self.seen[node].append(list(state["messages"]))
            reply = self.models[node].invoke([SystemMessage(system), *state["messages"]])
            return {"messages": [reply]}

        agent = StateGraph(MessagesState)
        agent.add_node("model", model)
        agent.add_node("tools", ToolNode([read_file], wrap_tool_call=wrap_tool_call,
                                         awrap_tool_call=awrap_tool_call))  # fmt: skip
        agent.add_edge(START, "model")
        agent.add_conditional_edges("model", tools_condition, {"tools": "tools", END: END})
        agent.add_edge("tools", "model")
        return agent.compile()

    def script(self, implement: list[AIMessage], review: list[AIMessage]) -> None:
        self.models["implement"].responses = implement
        self.models["implement"].i = 0
        self.models["review"].responses = review
        self.models["review"].i = 0


def _tool_texts(messages: list[Any]) -> list[str]:
    return [str(m.content) for m in messages if m.type == "tool"]


async def test_a_lesson_learned_in_run_one_is_delivered_once_in_run_two(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path)
    scenario = Scenario(checkout)
    graph = langgraph_graph(scenario.app, ROLES, BINDING, name="widgets-flow")
    assert [(n.id, n.kind) for n in graph.nodes] == [
        ("implement", "worker"),
        ("review", "verifier"),
    ]
    assert {"source": "implement", "target": "review", "conditional": False} in graph.raw["edges"]  # type: ignore[index,operator]
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        bench = Bench(tmp_path, checkout, store)
        scenario.script(_reads(TARGET, final="Done."), _reads(README, final="Approved."))
        with bench.open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph)
            config: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}
            chunks = list(memory.stream(scenario.app, {"messages": [HumanMessage("Fix it.")]},
                                        config))  # fmt: skip
            assert [next(iter(chunk)) for chunk in chunks] == ["implement", "review"]
            executions = memory.recorder.executions
            assert [(e.node_id, e.occurrence, e.attempt, e.status) for e in executions] == [
                ("implement", 1, 1, "completed"), ("review", 1, 1, "completed")]  # fmt: skip
            assert [(r.tool, r.paths, r.execution) for r in run.receipts] == [
                ("read_file", (TARGET,), executions[0].id),
                ("read_file", (README,), executions[1].id)]  # fmt: skip
            provider = first_answers(executions[0].id)
            report = await memory.settle("succeeded", provider=provider, new_id=lesson_ids())
        assert report.status == "completed", report
        assert [change.id for change in report.changes] == [LESSON_ID]
        assert "Buffers writes until flush()" in shown(provider, "repository_discovery")

        scenario.script(_reads(TARGET, TARGET, final="Done."), _reads(README, final="Approved."))
        with bench.open("run-2", graph) as run:
            memory = LangGraphMemory(run, graph)
            config = {"configurable": {"thread_id": "thread-2"}}
            final = [chunk async for chunk in memory.astream(
                scenario.app, {"messages": [HumanMessage("Fix it again.")]}, config,
                stream_mode="values")][-1]  # fmt: skip
            implement = memory.recorder.executions[0]
            assert [(d.lesson_id, d.node_id, d.channel, d.execution, d.conversation_id)
                    for d in run.deliveries] == [
                (LESSON_ID, "implement", "hook", implement.id, "thread-2/implement")]  # fmt: skip
            first, second = _tool_texts(scenario.seen["implement"][-1])
            assert first.startswith("class BlobWriter")
            assert card_text() in first
            assert card_text() not in second  # once per conversation
            assert card_text() not in _tool_texts(final["messages"])[-1]  # review's README read
            provider = second_answers()
            report = await memory.settle("succeeded", provider=provider)
        assert report.status == "completed", report
        assert delivered(provider)


async def test_a_resumed_thread_records_the_failed_task_as_a_second_attempt(
    tmp_path: Path,
) -> None:
    checkout = make_checkout(tmp_path)
    scenario = Scenario(checkout)
    graph = langgraph_graph(scenario.app, ROLES, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        scenario.script([AIMessage("Done.")], [])  # review's model has nothing left: it fails
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph)
            config: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}
            with pytest.raises(IndexError):
                list(memory.stream(scenario.app, {"messages": [HumanMessage("Go.")]}, config))
            scenario.script([], [AIMessage("Approved.")])
            list(memory.stream(scenario.app, None, config))  # resume the thread
            executions = memory.recorder.executions
            assert [(e.node_id, e.occurrence, e.attempt, e.status) for e in executions] == [
                ("implement", 1, 1, "completed"),
                ("review", 1, 1, "error"),
                ("review", 1, 2, "completed"),
            ]
            assert executions[2].completion == "Approved."
            record = memory.recorder.record()
            assert [e.id for e in record.executions] == [e.id for e in executions]


async def test_graph_guidance_ends_the_node_prompt_on_every_model_call(tmp_path: Path) -> None:
    from active_memory.models.changes import Mutation, Publication
    from active_memory.models.lessons import Evidence, GraphScope, LessonDraft

    checkout = make_checkout(tmp_path)
    scenario = Scenario(checkout)
    graph = langgraph_graph(scenario.app, ROLES, BINDING)
    draft = LessonDraft(
        scope=GraphScope(graph_hash=graph.hash, node_id="implement"),
        title="Read the writer first",
        recommendation="Read the BlobWriter before changing how tests assert on storage.",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen before"),
    )
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        store.publish(Publication(run_id="seed", mutations=(
            Mutation(op="upsert", id=LESSON_ID, expected_revision=0, draft=draft),)))  # fmt: skip
        scenario.script(_reads(TARGET, final="Done."), _reads(README, final="Approved."))
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph)
            list(memory.stream(scenario.app, {"messages": [HumanMessage("Go.")]},
                               {"configurable": {"thread_id": "t"}}))  # fmt: skip
            assert len(scenario.prompts["implement"]) == 2
            assert all(p.startswith("You implement the change.\n\n") and "Read the writer first"
                       in p for p in scenario.prompts["implement"])  # fmt: skip
            assert scenario.prompts["review"] == ["You review the change."] * 2
            assert [(d.node_id, d.channel) for d in run.deliveries] == [("implement", "prompt")]
    # Without a running memory the graph runs as authored: the wrapper only runs the tool.
    scenario.script(_reads(TARGET, final="Done."), _reads(README, final="Approved."))
    out = scenario.app.invoke({"messages": [HumanMessage("Go.")]},
                              {"configurable": {"thread_id": "plain"}})  # fmt: skip
    assert out["messages"][-1].content == "Approved."


def _flat(checkout: Path, model: FakeMessagesListChatModel, *, fails: bool = False) -> Any:
    """One agent node and a top-level ToolNode serving it (``tools`` maps to ``implement``)."""

    @tool
    def read_file(path: str) -> str:
        """Read a file of the checkout."""
        if fails:
            raise OSError(f"cannot read {path}")
        return (checkout / path).read_text(encoding="utf-8")

    def implement(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        system = SystemMessage(node_prompt("Implement.", config))
        return {"messages": [model.invoke([system, *state["messages"]])]}

    builder = StateGraph(MessagesState)
    builder.add_node("implement", implement)
    builder.add_node("tools", ToolNode([read_file], wrap_tool_call=wrap_tool_call,
                                       awrap_tool_call=awrap_tool_call,
                                       handle_tool_errors=not fails))  # fmt: skip
    builder.add_edge(START, "implement")
    builder.add_conditional_edges("implement", tools_condition)
    builder.add_edge("tools", "implement")
    return builder.compile(checkpointer=InMemorySaver())


def _seed(store: SqliteStore) -> None:
    from active_memory.models.changes import Mutation, Publication
    from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope

    draft = LessonDraft(
        scope=RepositoryScope(repository="forge:github.com/acme/widgets", files=(TARGET,)),
        title="Flush the BlobWriter before asserting",
        recommendation="Writes stay buffered until flush() or close().",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen before"),
    )
    store.publish(Publication(run_id="seed", mutations=(
        Mutation(op="upsert", id=LESSON_ID, expected_revision=0, draft=draft),)))  # fmt: skip


async def test_a_top_level_tool_node_records_its_tasks_and_delivers_to_the_execution_that_asked(
    tmp_path: Path,
) -> None:
    checkout = make_checkout(tmp_path)
    model = FakeMessagesListChatModel(responses=_reads(TARGET, final="Done."))
    app = _flat(checkout, model)
    graph = langgraph_graph(app, {"implement": "worker"}, BINDING)
    assert [(n.id, n.kind) for n in graph.nodes] == [("implement", "worker"), ("tools", "tool")]
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        _seed(store)
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph, tool_nodes={"tools": "implement"})
            list(memory.stream(app, {"messages": [HumanMessage("Go.")]},
                               {"configurable": {"thread_id": "t"}}))  # fmt: skip
            executions = memory.recorder.executions
            assert [(e.node_id, e.occurrence, e.status) for e in executions] == [
                ("implement", 1, "completed"), ("tools", 1, "completed"),
                ("implement", 2, "completed")]  # fmt: skip
            # The implement model's call asked for the read: the card is that execution's.
            assert [(d.node_id, d.execution, d.conversation_id) for d in run.deliveries] == [
                ("implement", executions[0].id, "t/implement")]  # fmt: skip
            assert [r.execution for r in run.receipts] == [executions[0].id]
            assert executions[2].completion == "Done."


async def test_a_tool_that_raises_hands_no_card_over(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path)
    model = FakeMessagesListChatModel(responses=_reads(TARGET, final="Done."))
    app = _flat(checkout, model, fails=True)
    graph = langgraph_graph(app, {"implement": "worker"}, BINDING)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        _seed(store)
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = LangGraphMemory(run, graph, tool_nodes={"tools": "implement"})
            with pytest.raises(OSError, match="cannot read"):
                list(memory.stream(app, {"messages": [HumanMessage("Go.")]},
                                   {"configurable": {"thread_id": "t"}}))  # fmt: skip
            assert run.deliveries == ()
            assert [r.tool for r in run.receipts] == ["read_file"]
            assert [e.status for e in memory.recorder.executions] == ["completed", "error"]


def test_only_a_thread_whose_tool_messages_carry_cards_has_its_history_read() -> None:
    from langchain_core.messages import ToolMessage

    from active_memory.integrations._langgraph_messages import Carried

    carried = Carried()
    assert not carried.carries("thread-1")
    carried.add("thread-1", "call-1", "<active_memory>card</active_memory>", ("lesson-1@1",))
    assert carried.carries("thread-1")
    assert not carried.carries("thread-2")
    history = [ToolMessage("out\n\n<active_memory>card</active_memory>", tool_call_id="call-1")]
    assert carried.held("thread-1", history) == {"lesson-1@1"}
    assert carried.held("thread-2", history) == set()
