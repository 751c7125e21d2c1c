"""The Claude Agent SDK integration, end to end: the real SDK spawning the real Claude Code CLI
against a loopback stand-in for the Anthropic API, over a real git checkout, twice.

Slow: the SDK starts the real Claude Code CLI (Node.js) for every query."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk", reason="the claude-agent-sdk extra is not installed")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, UserMessage

from active_memory.integrations.claude_agent_sdk import (
    ClaudeAgentMemory,
    RecordedQuery,
    _with_guidance,
    claude_graph,
)
from active_memory.store.sqlite import SqliteStore
from active_memory.testing import ScriptedProvider
from integrations.anthropic_stand_in import AnthropicStandIn, ToolCall, claude_cli
from integrations.kit import (
    EDGES,
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
from postmortem.postmortem_kit import by_labels, no_lessons

pytestmark = pytest.mark.slow
MODEL = "claude-sonnet-4-5"


@pytest.fixture(scope="module")
def cli() -> str:
    path = claude_cli()
    if path is None:
        pytest.skip("neither the SDK's bundled Claude Code CLI nor the npm package is available")
    return path


def _options(
    cli: str, stand_in: AnthropicStandIn, checkout: Path, home: Path
) -> ClaudeAgentOptions:
    env = {
        "ANTHROPIC_BASE_URL": stand_in.url,
        "ANTHROPIC_API_KEY": "sk-ant-integration-stand-in",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "HOME": str(home),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    return ClaudeAgentOptions(
        cli_path=cli,
        cwd=str(checkout),
        env=env,
        model=MODEL,
        allowed_tools=["Read"],
        setting_sources=[],
        max_turns=6,
        system_prompt="You work on the widgets repository.",
    )


def _traced(cli: str, folder: Path) -> tuple[str, Path | None]:
    """Where strace works (as in the conformance suite), the CLI under ``strace -f`` through a
    wrapper script, so the test can check that every connect was to loopback."""
    from conformance.kit import trace_prefix, tracing

    if not tracing():
        return cli, None
    trace = folder / "cli.strace"
    wrapper = folder / "claude-traced"
    prefix = " ".join(shlex.quote(part) for part in trace_prefix(trace))
    wrapper.write_text(f'#!/bin/sh\nexec {prefix} {shlex.quote(cli)} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o700)
    return str(wrapper), trace


def _assert_loopback_only(trace: Path | None) -> None:
    from conformance.kit import foreign_connects

    if trace is not None:
        assert foreign_connects(trace.read_text(errors="replace")) == []


async def _run_graph(memory: ClaudeAgentMemory, options: ClaudeAgentOptions) -> None:
    for node in ("implement", "review"):
        results = [m async for m in memory.query(node, f"[node:{node}] do the work", options)]
        assert isinstance(results[-1], ResultMessage)
        assert not results[-1].is_error


async def test_a_lesson_learned_in_run_one_is_delivered_once_in_run_two(
    tmp_path: Path, cli: str
) -> None:
    checkout = make_checkout(tmp_path)
    cli, trace = _traced(cli, tmp_path)
    target, readme = str(checkout / TARGET), str(checkout / README)
    graph = claude_graph("widgets-flow", ROLES, model=MODEL, edges=EDGES)
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        bench = Bench(tmp_path, checkout, store)

        first_scripts = {"[node:implement]": [ToolCall("Read", {"file_path": target})],
                         "[node:review]": [ToolCall("Read", {"file_path": readme})]}  # fmt: skip
        with AnthropicStandIn(first_scripts) as stand_in, bench.open("run-1", graph) as run:
            memory = ClaudeAgentMemory(run, graph)
            await _run_graph(memory, _options(cli, stand_in, checkout, tmp_path / "home1"))
            assert run.deliveries == ()
            assert [(r.tool, r.paths) for r in run.receipts] == [
                ("Read", (TARGET,)),
                ("Read", (README,)),
            ]
            provider = first_answers("implement-1-1")
            report = await memory.settle("succeeded", provider=provider, new_id=lesson_ids())
        assert report.status == "completed", report
        assert report.model == MODEL  # the session's model, inherited
        assert [change.id for change in report.changes] == [LESSON_ID]
        # The record came from the message stream: the read's result is in the transcript.
        assert "Buffers writes until flush()" in shown(provider, "repository_discovery")

        second_scripts = {
            "[node:implement]": [ToolCall("Read", {"file_path": target}),
                                 ToolCall("Read", {"file_path": target})],
            "[node:review]": [ToolCall("Read", {"file_path": readme})],
        }  # fmt: skip
        with AnthropicStandIn(second_scripts) as stand_in, bench.open("run-2", graph) as run:
            memory = ClaudeAgentMemory(run, graph)
            await _run_graph(memory, _options(cli, stand_in, checkout, tmp_path / "home2"))
            implement = memory.recorder.executions[0]
            assert [(d.lesson_id, d.node_id, d.channel, d.execution, d.conversation_id)
                    for d in run.deliveries] == [
                (LESSON_ID, "implement", "hook", "implement-1-1", implement.conversation_id)
            ]  # fmt: skip
            assert len(run.receipts) == 3
            # The card reached the model beside the first read's result, and only there.
            implement_bodies = stand_in.after_tool("[node:implement]")
            assert card_text() in implement_bodies[0]
            assert implement_bodies[-1].count(card_text()) == 1
            assert all(card_text() not in body for body in stand_in.after_tool("[node:review]"))
            provider = second_answers()
            report = await memory.settle("succeeded", provider=provider)
        assert report.status == "completed", report
        assert delivered(provider)
        assert report.specialist("repository_maintenance").decisions == {"keep": 1}
    _assert_loopback_only(trace)


def test_guidance_is_appended_to_every_system_prompt_form() -> None:
    guidance = "GUIDANCE"
    assert _with_guidance(ClaudeAgentOptions(), guidance).system_prompt == guidance
    assert (
        _with_guidance(ClaudeAgentOptions(system_prompt="Be terse."), guidance).system_prompt
        == "Be terse.\n\nGUIDANCE"
    )
    preset = ClaudeAgentOptions(system_prompt={"type": "preset", "preset": "claude_code"})
    assert _with_guidance(preset, guidance).system_prompt == {
        "type": "preset", "preset": "claude_code", "append": "GUIDANCE"}  # fmt: skip
    custom = ClaudeAgentOptions(system_prompt={"type": "custom", "prompt": "Own."})
    assert _with_guidance(custom, guidance).system_prompt == {
        "type": "custom",
        "prompt": "Own.\n\nGUIDANCE",
    }
    file = ClaudeAgentOptions(system_prompt={"type": "file", "path": "/prompt.md"})
    assert _with_guidance(file, guidance).extra_args == {"append-system-prompt": "GUIDANCE"}
    assert _with_guidance(file, "").extra_args == {}


def test_the_message_stream_makes_the_execution_and_its_subagent_tasks(tmp_path: Path) -> None:
    from claude_agent_sdk import (
        AssistantMessage,
        SystemMessage,
        TaskNotificationMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
    )

    checkout = make_checkout(tmp_path)
    graph = claude_graph("widgets-flow", ROLES, model=MODEL, edges=EDGES)
    store = SqliteStore(tmp_path / "lessons.sqlite3")
    with store, Bench(tmp_path, checkout, store).open("run-1", graph) as run:
        memory = ClaudeAgentMemory(run, graph)
        options, log = memory.options("implement", ClaudeAgentOptions(model=MODEL))
        assert options.session_id == log.conversation_id
        assert options.hooks is not None
        assert len(options.hooks["PreToolUse"]) == 1
        stream = [
            SystemMessage("init", {"model": "claude-opus-4-1", "session_id": "s"}),
            AssistantMessage([ToolUseBlock("task-1", "Task", {"prompt": "look"})], MODEL),
            AssistantMessage([ToolUseBlock("read-1", "Read", {"file_path": TARGET})], MODEL,
                             parent_tool_use_id="task-1"),
            UserMessage([ToolResultBlock("read-1", "class BlobWriter")],
                        parent_tool_use_id="task-1"),
            TaskNotificationMessage("task_notification", {}, "t1", "completed", "", "Looked.",
                                    "u1", "s", tool_use_id="task-1"),
            UserMessage([ToolResultBlock("task-1", "Looked.")]),
            AssistantMessage([TextBlock("All done.")], MODEL),
        ]  # fmt: skip
        for message in stream:
            memory.observe(log, message)
        log.finish("completed")
        record = memory.recorder.record()
    main, task = record.executions[:2]
    assert (main.id, main.occurrence, main.completion) == ("implement-1-1", 1, "All done.")
    assert (task.id, task.node_id, task.occurrence, task.status, task.completion) == (
        "implement-1-1.task-1", "implement", 2, "completed", "Looked.")  # fmt: skip
    assert task.conversation_id == f"{main.conversation_id}/task-task-1"
    assert memory.models == {"implement": "claude-opus-4-1"}  # what the session reported
    assert main.transcript is not None
    assert task.transcript is not None
    lines = task.transcript.read_text("utf-8")
    assert '"tool": "Read"' in lines
    assert "class BlobWriter" in lines


class HostError(Exception):
    """The host's own code failing while it reads a session's messages."""


async def _read(stream: Any) -> None:
    async for message in stream:
        if isinstance(message, UserMessage):  # the tool's result: the host's handler fails
            raise HostError("the host's handler failed")


async def _read_within(query: RecordedQuery) -> None:
    async with query as stream:
        await _read(stream)


async def test_a_host_error_inside_the_query_loop_is_recorded_as_an_error(
    tmp_path: Path, cli: str
) -> None:
    checkout = make_checkout(tmp_path)
    graph = claude_graph("widgets-flow", ROLES, model=MODEL, edges=EDGES)
    target = str(checkout / TARGET)
    scripts = {node: [ToolCall("Read", {"file_path": target})]
               for node in ("[node:implement]", "[node:review]")}  # fmt: skip
    store = SqliteStore(tmp_path / "lessons.sqlite3")
    with store, AnthropicStandIn(scripts) as stand_in, Bench(
        tmp_path, checkout, store).open("run-1", graph) as run:  # fmt: skip
        memory = ClaudeAgentMemory(run, graph)
        options = _options(cli, stand_in, checkout, tmp_path / "home")
        # As a context manager, the query sees the host's error itself.
        query = memory.query("implement", "[node:implement] go", options)
        with pytest.raises(HostError):
            await _read_within(query)
        assert query.execution.status == "error"
        # Iterated bare, a generator cannot tell an error from a break: the failed run ends it.
        query = memory.query("review", "[node:review] go", options)
        with pytest.raises(HostError):
            await _read(query)
        assert query.execution.status is None
        provider = ScriptedProvider(by_labels(no_lessons()))
        report = await memory.settle("failed", provider=provider)
        assert report.status == "completed", report
        record = memory.recorder.record()
    assert [(e.node_id, e.status) for e in record.executions] == [
        ("implement", "error"), ("review", "error")]  # fmt: skip
    assert all(e.transcript is not None for e in record.executions)


async def test_a_query_the_host_stops_reading_is_cancelled(tmp_path: Path, cli: str) -> None:
    checkout = make_checkout(tmp_path)
    graph = claude_graph("widgets-flow", ROLES, model=MODEL, edges=EDGES)
    scripts = {"[node:implement]": [ToolCall("Read", {"file_path": str(checkout / README)})]}
    store = SqliteStore(tmp_path / "lessons.sqlite3")
    with store, AnthropicStandIn(scripts) as stand_in, Bench(
        tmp_path, checkout, store).open("run-1", graph) as run:  # fmt: skip
        memory = ClaudeAgentMemory(run, graph)
        options = _options(cli, stand_in, checkout, tmp_path / "home")
        async with memory.query("implement", "[node:implement] go", options) as stream:
            async for message in stream:
                if isinstance(message, UserMessage):
                    break
        assert stream.execution.status == "cancelled"
        async with memory.query("implement", "[node:implement] go", options) as stream:
            messages = [message async for message in stream]
        assert isinstance(messages[-1], ResultMessage)
        assert stream.execution.status == "completed"
