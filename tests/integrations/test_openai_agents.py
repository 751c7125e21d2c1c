"""The OpenAI Agents SDK integration, end to end: the real Runner, its handoffs and function tools,
the SDK's own scripted Model (its Model interface), over a real git checkout, twice."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

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


async def test_a_lesson_learned_in_run_one_is_delivered_once_in_run_two(
    tmp_path: Path, openai_agents: ModuleType
) -> None:
    s = openai_agents
    checkout = make_checkout(tmp_path)
    start = s.make_agents(checkout)
    graph = s.agents_graph(start, ROLES, name="widgets-flow")
    assert [(n.id, n.kind, n.binding.model if n.binding else None) for n in graph.nodes] == [
        ("implement", "worker", s.IMPLEMENT_MODEL),
        ("review", "verifier", s.REVIEW_MODEL),
    ]
    assert graph.raw["edges"] == [{"source": "implement", "target": "review"}]  # type: ignore[index]
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        bench = Bench(tmp_path, checkout, store)
        with bench.open("run-1", graph) as run:
            memory = s.OpenAIAgentsMemory(run, graph)
            config = s.RunConfig(model_provider=s.script(1), tracing_disabled=True)
            result = await memory.run(start, "Fix the writer.", run_config=config)
            assert result.final_output == "Approved."
            assert [(e.id, e.node_id, e.occurrence) for e in memory.recorder.executions] == [
                ("implement-1-1", "implement", 1), ("review-1-1", "review", 1)]  # fmt: skip
            assert [(r.tool, r.paths, r.execution) for r in run.receipts] == [
                ("read_file", (TARGET,), "implement-1-1"),
                ("read_file", (README,), "review-1-1")]  # fmt: skip
            served: list[Binding] = []
            provider = first_answers("implement-1-1")
            report = await memory.settle("succeeded", provider_factory=s.factory(served, provider),
                                         new_id=lesson_ids())  # fmt: skip
        assert report.status == "completed", report
        assert [change.id for change in report.changes] == [LESSON_ID]
        # The postmortem's sessions ran on the source agent's own model, through our providers.
        assert {(b.provider, b.model) for b in served} == {("openai", s.IMPLEMENT_MODEL)}
        assert "Buffers writes until flush()" in shown(provider, "repository_discovery")

        with bench.open("run-2", graph) as run:
            memory = s.OpenAIAgentsMemory(run, graph)
            models = s.script(2)
            config = s.RunConfig(model_provider=models, tracing_disabled=True)
            await memory.run(start, "Fix the writer again.", run_config=config)
            assert [(d.lesson_id, d.node_id, d.channel, d.execution) for d in run.deliveries] == [
                (LESSON_ID, "implement", "hook", "implement-1-1")]  # fmt: skip
            first, second = s.outputs(models.models[s.IMPLEMENT_MODEL])
            assert first.startswith("class BlobWriter")
            assert card_text() in first
            assert card_text() not in second  # once per conversation
            # The review agent inherits the history, card included, and gets nothing new.
            assert all(
                card_text() not in out for out in s.outputs(models.models[s.REVIEW_MODEL])[2:]
            )
            provider = second_answers()
            report = await memory.settle("succeeded", provider=provider)
        assert report.status == "completed", report
        assert delivered(provider)


async def test_graph_guidance_ends_each_agents_instructions_every_turn(
    tmp_path: Path, openai_agents: ModuleType
) -> None:
    s = openai_agents
    from active_memory.models.changes import Mutation, Publication
    from active_memory.models.lessons import Evidence, GraphScope, LessonDraft

    checkout = make_checkout(tmp_path)
    start = s.make_agents(checkout)
    graph = s.agents_graph(start, ROLES)
    draft = LessonDraft(
        scope=GraphScope(graph_hash=graph.hash, node_id="review"),
        title="Review against the buffering contract",
        recommendation="Check that every test flushes the BlobWriter before it asserts.",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen before"),
    )
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        store.publish(Publication(run_id="seed", mutations=(
            Mutation(op="upsert", id=LESSON_ID, expected_revision=0, draft=draft),)))  # fmt: skip
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = s.OpenAIAgentsMemory(run, graph)
            models = s.script(1)
            await memory.run(
                start, "Go.", run_config=s.RunConfig(model_provider=models, tracing_disabled=True)
            )
            review_calls = models.models[s.REVIEW_MODEL].calls
            assert len(review_calls) == 2
            for call in review_calls:
                assert call.system_instructions is not None
                assert call.system_instructions.startswith("Review the change.")
                assert "Review against the buffering contract" in call.system_instructions
            implement = models.models[s.IMPLEMENT_MODEL].calls[0].system_instructions
            assert implement == "Implement the change."
            assert [(d.node_id, d.channel) for d in run.deliveries] == [("review", "prompt")]


def test_cards_keep_the_tools_own_output_form(openai_agents: ModuleType) -> None:
    s = openai_agents
    assert s._with_cards("result", "CARDS") == "result\n\nCARDS"
    assert s._with_cards("", "CARDS") == "CARDS"
    text = s.ToolOutputText(text="result")
    assert s._with_cards(text, "CARDS") == [text, s.ToolOutputText(text="CARDS")]
    assert s._with_cards([text], "CARDS") == [text, s.ToolOutputText(text="CARDS")]
    assert s._with_cards(42, "CARDS") == "42\n\nCARDS"
    image = {"type": "image", "image_url": "data:image/png;base64,AA=="}
    assert s._with_cards(image, "CARDS") == [image, s.ToolOutputText(text="CARDS")]
    assert s._with_cards({"rows": 3}, "CARDS") == "{'rows': 3}\n\nCARDS"


async def test_a_tool_that_raises_hands_no_card_over(
    tmp_path: Path, openai_agents: ModuleType
) -> None:
    from active_memory.models.changes import Mutation, Publication
    from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope

    s = openai_agents
    checkout = make_checkout(tmp_path)
    failing, working = s.failing_agent(), s.make_agents(checkout)
    graph = s.agents_graph(failing, {"implement": "worker"})
    draft = LessonDraft(
        scope=RepositoryScope(repository="forge:github.com/acme/widgets", files=(TARGET,)),
        title="Flush the BlobWriter before asserting",
        recommendation="Writes stay buffered until flush() or close().",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen before"),
    )
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        store.publish(Publication(run_id="seed", mutations=(
            Mutation(op="upsert", id=LESSON_ID, expected_revision=0, draft=draft),)))  # fmt: skip
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = s.OpenAIAgentsMemory(run, graph)
            config = s.RunConfig(model_provider=s.one_read(), tracing_disabled=True)
            with pytest.raises(s.UserError, match="cannot read"):
                await memory.run(failing, "Go.", run_config=config, conversation_id="c")
            assert run.deliveries == ()
            assert [r.tool for r in run.receipts] == ["read_file"]
            assert memory.recorder.executions[0].status == "error"
            # The card stayed eligible in that conversation: the next read delivers it.
            config = s.RunConfig(model_provider=s.one_read(), tracing_disabled=True)
            await memory.run(working, "Go.", run_config=config, conversation_id="c")
            assert [(d.lesson_id, d.conversation_id) for d in run.deliveries] == [(LESSON_ID, "c")]


@pytest.mark.parametrize("failure", ["model", "turns"])
async def test_a_run_that_raises_keeps_its_record_up_to_the_error(
    tmp_path: Path, openai_agents: ModuleType, failure: str
) -> None:
    import json

    from active_memory.models.changes import Mutation, Publication
    from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope

    s = openai_agents
    checkout = make_checkout(tmp_path)
    start, models = s.review_loop(checkout, failure)
    graph = s.agents_graph(start, ROLES)
    draft = LessonDraft(
        scope=RepositoryScope(repository="forge:github.com/acme/widgets", files=(TARGET,)),
        title="Flush the BlobWriter before asserting",
        recommendation="Writes stay buffered until flush() or close().",
        evidence=Evidence(run_id="run-0", references=("exec:e1",), reason="seen before"),
    )
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        store.publish(Publication(run_id="seed", mutations=(
            Mutation(op="upsert", id=LESSON_ID, expected_revision=0, draft=draft),)))  # fmt: skip
        with Bench(tmp_path, checkout, store).open("run-1", graph) as run:
            memory = s.OpenAIAgentsMemory(run, graph)
            config = s.RunConfig(model_provider=models, tracing_disabled=True)
            error = RuntimeError if failure == "model" else s.MaxTurnsExceeded
            with pytest.raises(error):
                await memory.run(start, "Make the test flush.", run_config=config, max_turns=7)
            record = memory.recorder.record()
            assert [(e.id, e.status) for e in record.executions] == [
                ("implement-1-1", "completed"), ("review-1-1", "completed"),
                ("implement-2-1", "error")]  # fmt: skip
            texts = {e.id: e.transcript.read_text("utf-8") for e in record.executions
                     if e.transcript is not None}  # fmt: skip
            # The reviewer's rejection survived the error, and so did everything before it.
            assert "Rejected: the test asserts before flush()." in texts["review-1-1"]
            assert record.executions[1].completion == "Rejected: the test asserts before flush()."
            lines = [json.loads(line) for line in texts["implement-1-1"].splitlines()]
            assert [(line["role"], line.get("tool")) for line in lines] == [
                ("user", None), ("assistant", "read_file"), ("tool", "read_file"),
                ("assistant", "edit_file"), ("tool", "edit_file"),
                ("assistant", "transfer_to_review"), ("tool", "handoff")]  # fmt: skip
            read = lines[2]
            assert read["text"].startswith("class BlobWriter")
            assert card_text() in read["text"]
            assert read["receipt"] == run.receipts[0].seq
            assert [r.execution for r in run.receipts][:3] == [
                "implement-1-1", "implement-1-1", "review-1-1"]  # fmt: skip
            assert [(d.lesson_id, d.execution) for d in run.deliveries] == [
                (LESSON_ID, "implement-1-1")]  # fmt: skip
