"""Integrations benchmark: what in-process recall adds to one tool call, per framework.

Run: ``python benchmarks/integrations_bench.py`` (``--rounds N``; ``--quick`` for 300).

One run over one frozen index (10,000 synthetic repository lessons over a tree of 30,000 files)
serves every series, and the series are interleaved call by call so machine noise hits them
alike. Each call reads a random file of the synthetic tree in a fresh conversation, so every
call does the whole work (signals, match, render, claim, commit, receipt). Each framework is
timed twice, through its entry point with recall and without (the same call, the same tool, the
framework's own objects built before the clock starts), and what recall adds is the difference
of the medians:

* Claude Agent SDK: the ``PreToolUse`` hook callback, against a callback answering ``{}``;
* OpenAI Agents SDK: a wrapped function tool invoked as the Runner invokes it (JSON arguments,
  a ``ToolContext``), against the bare tool (async, a dict lookup);
* LangGraph: the ``ToolNode`` tool-call wrapper around ``execute``, against ``execute`` alone;
* a plain dict lookup of the file's contents, the yardstick of this run's machine;
* the broker: the same Claude payload POSTed to the run's broker as Claude Code's ``http`` hook
  does, on a kept-alive connection and on a new one.

Prints medians and p99s, what recall adds per framework (goal: at most 50 us) and as dict
lookups, then each broker figure over each in-process one.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from active_memory.host import open_run
from active_memory.integrations._runs import authored_graph
from active_memory.models.config import RuntimeConfig
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, Lesson, RepositoryScope
from active_memory.models.runs import Binding
from active_memory.store.backend import RunIdentity, Snapshot, SnapshotRequest

Call = Callable[[int], Awaitable[None]]
REPOSITORY = "forge:example.com/acme/monorepo"
WORKSPACE = "/work/monorepo"
EVIDENCE = Evidence(run_id="bench", references=("exec:e1",), reason="synthetic")


def synthetic_tree(rng: random.Random, files: int) -> list[str]:
    """Root-relative paths of a synthetic monorepo, three folders deep."""
    words = ["cache", "queue", "lease", "export", "region", "store", "api", "jobs", "auth"]
    return [f"pkg{rng.randrange(40)}/{rng.choice(words)}/{rng.choice(words)}_{n}.py"
            for n in range(files)]  # fmt: skip


def synthetic_lessons(rng: random.Random, tree: list[str], count: int) -> tuple[Lesson, ...]:
    """Repository lessons about one to three files of ``tree`` each."""
    return tuple(
        Lesson(
            id=new_lesson_id(),
            revision=1,
            scope=RepositoryScope(
                repository=REPOSITORY,
                files=tuple(dict.fromkeys(rng.sample(tree, rng.randint(1, 3)))),
            ),
            title=f"Synthetic lesson {number}",
            recommendation="Check the cache region before retrying the export; the lease expires.",
            evidence=EVIDENCE,
        )
        for number in range(count)
    )


class FakeBackend:
    """A snapshot of the synthetic lessons; nothing is published in a benchmark."""

    def __init__(self, lessons: tuple[Lesson, ...]) -> None:
        self.lessons = lessons

    def snapshot(self, request: SnapshotRequest) -> Snapshot:
        return Snapshot(1, self.lessons)

    def publish(self, *args: object) -> object:
        raise NotImplementedError("the benchmark publishes nothing")

    def generation(self) -> int:
        return 1


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def line(label: str, samples: list[float]) -> str:
    median, p99 = statistics.median(samples) * 1e6, percentile(samples, 0.99) * 1e6
    return f"  {label:<40} median {median:9.1f} us   p99 {p99:9.1f} us   (n={len(samples)})"


def claude_series(run: Any, graph: Any, paths: list[str]) -> tuple[Call, Call]:
    from active_memory.integrations.claude_agent_sdk import ClaudeAgentMemory

    hook = ClaudeAgentMemory(run, graph).hook("implement")
    payloads = [{"session_id": f"claude-{number}", "transcript_path": "/tmp/t.jsonl",
                 "cwd": WORKSPACE, "hook_event_name": "PreToolUse", "tool_name": "Read",
                 "tool_input": {"file_path": f"{WORKSPACE}/{path}"},
                 "tool_use_id": f"toolu_{number}"}
                for number, path in enumerate(paths)]  # fmt: skip

    async def nothing(payload: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        return {}

    async def call(number: int) -> None:
        await hook(payloads[number], f"toolu_{number}", {"signal": None})  # type: ignore[arg-type]

    async def bare(number: int) -> None:
        await nothing(payloads[number], f"toolu_{number}", {"signal": None})

    return call, bare


def openai_series(
    run: Any, graph: Any, paths: list[str], files: dict[str, str]
) -> tuple[Call, Call]:
    from agents.tool_context import ToolContext

    from active_memory.integrations import openai_agents
    from agents import Agent, function_tool

    @function_tool
    async def read_file(file_path: str) -> str:  # async: a sync tool adds a thread hop to both
        """Read a file."""
        return files.get(file_path, "")

    memory = openai_agents.OpenAIAgentsMemory(run, graph)
    wrapped = memory.wrap_tool(read_file)
    agent = Agent(name="implement")
    state = openai_agents._RunState(memory, "openai-0")
    openai_agents._current.set(state)  # what OpenAIAgentsMemory.run sets for its Runner run
    state.enter("implement")

    def context(number: int) -> tuple[ToolContext[Any], str]:
        arguments = json.dumps({"file_path": paths[number]})
        return ToolContext(context=None, tool_name="read_file", tool_call_id=f"call_{number}",
                           tool_arguments=arguments, agent=agent), arguments  # fmt: skip

    contexts = [context(number) for number in range(len(paths))]

    async def call(number: int) -> None:
        state.conversation_id = f"openai-{number}"  # a fresh conversation, as in every series
        await wrapped.on_invoke_tool(*contexts[number])

    async def bare(number: int) -> None:
        await read_file.on_invoke_tool(*contexts[number])

    return call, bare


def langgraph_series(
    run: Any, graph: Any, paths: list[str], files: dict[str, str]
) -> tuple[Call, Call]:
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from active_memory.integrations.langgraph import LangGraphMemory

    memory = LangGraphMemory(run, graph)
    # What the ToolNode hands the wrapper: the call, the state, the task's runtime config.
    requests = [
        ToolCallRequest(
            tool_call={"name": "read_file", "args": {"path": path}, "id": f"c{number}"},
            tool=None, state={"messages": []},  # type: ignore[arg-type]
            runtime=SimpleNamespace(config={"configurable": {  # type: ignore[arg-type]
                "thread_id": f"langgraph-{number}", "checkpoint_ns": "implement:task-1"}}),
        )
        for number, path in enumerate(paths)
    ]  # fmt: skip

    def execute(request: ToolCallRequest) -> ToolMessage:
        path = request.tool_call["args"]["path"]
        return ToolMessage(files.get(path, ""), tool_call_id=request.tool_call["id"])

    async def call(number: int) -> None:
        memory.wrap_tool_call(requests[number], execute)

    async def bare(number: int) -> None:
        execute(requests[number])

    return call, bare


def dict_series(paths: list[str], files: dict[str, str]) -> Call:
    async def call(number: int) -> None:
        files.get(paths[number])

    return call


def broker_series(run: Any, paths: list[str]) -> tuple[Call, Call, Callable[[], None]]:
    env = run.hook_env("implement", "broker-0")
    host, port = env["ACTIVE_MEMORY_BROKER"].split(":")
    token = env["ACTIVE_MEMORY_TOKEN"]
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    keep = http.client.HTTPConnection(host, int(port))

    def body(number: int) -> bytes:
        payload = {"session_id": f"broker-{number}", "cwd": WORKSPACE,
                   "hook_event_name": "PreToolUse", "tool_name": "Read",
                   "tool_input": {"file_path": f"{WORKSPACE}/{paths[number]}"}}  # fmt: skip
        return json.dumps(payload).encode()

    async def kept(number: int) -> None:
        keep.request("POST", "/hook/claude", body(number),
                     {**headers, "X-Active-Memory-Conversation": f"k{number}"})  # fmt: skip
        keep.getresponse().read()

    async def fresh(number: int) -> None:
        connection = http.client.HTTPConnection(host, int(port))
        connection.request("POST", "/hook/claude", body(number),
                           {**headers, "X-Active-Memory-Conversation": f"n{number}"})  # fmt: skip
        connection.getresponse().read()
        connection.close()

    return kept, fresh, keep.close


FRAMEWORKS = {
    "Claude Agent SDK": ("Claude Agent SDK hook callback", "Claude Agent SDK hook answering {}"),
    "OpenAI Agents": ("OpenAI Agents wrapped function tool", "OpenAI Agents bare function tool"),
    "LangGraph": ("LangGraph tool-call wrapper", "LangGraph execute alone"),
}
DICT = "plain dict lookup"
GOAL_US = 50.0


async def timed(series: dict[str, Call], rounds: int) -> dict[str, list[float]]:
    """Each series' seconds per call, the series interleaved call by call."""
    samples: dict[str, list[float]] = {name: [] for name in series}
    for number in range(rounds):
        for name, call in series.items():
            started = time.perf_counter()
            await call(number)
            samples[name].append(time.perf_counter() - started)
    return samples


async def bench(rounds: int) -> None:
    rng = random.Random(7)
    tree = synthetic_tree(rng, 30_000)
    lessons = synthetic_lessons(rng, tree, 10_000)
    files = {path: f"# {path}\n" for path in tree}
    graph = authored_graph("bench", {"implement": "worker"}, Binding(provider="x", model="m"))
    identity = RunIdentity("bench", repository=REPOSITORY, graph_hash=graph.hash)
    run = open_run(identity, RuntimeConfig(), FakeBackend(lessons), WORKSPACE)
    paths = [rng.choice(tree) for _ in range(rounds)]
    try:
        claude, claude_bare = claude_series(run, graph, paths)
        openai_wrapped, openai_bare = openai_series(run, graph, paths, files)
        langgraph, langgraph_bare = langgraph_series(run, graph, paths, files)
        kept, fresh, close = broker_series(run, paths)
        in_process: dict[str, Call] = {
            FRAMEWORKS["Claude Agent SDK"][0]: claude,
            FRAMEWORKS["Claude Agent SDK"][1]: claude_bare,
            FRAMEWORKS["OpenAI Agents"][0]: openai_wrapped,
            FRAMEWORKS["OpenAI Agents"][1]: openai_bare,
            FRAMEWORKS["LangGraph"][0]: langgraph,
            FRAMEWORKS["LangGraph"][1]: langgraph_bare,
            DICT: dict_series(paths, files),
        }
        brokered = {"broker http hook, keep-alive": kept, "broker http hook, new connection": fresh}
        # Two passes: the broker answers from a thread of this process, whose work after a
        # response would hold the interpreter during the next in-process call.
        samples = await timed(in_process, rounds)
        samples.update(await timed(brokered, rounds))
        close()
    finally:
        run.close()
    print(f"recall per tool call, 10,000 lessons, fresh conversations, {rounds} rounds")
    for name, values in samples.items():
        print(line(name, values))
    median = {name: statistics.median(values) for name, values in samples.items()}
    print(f"what recall adds per tool call (medians; goal at most {GOAL_US:.0f} us)")
    for framework, (wrapped, bare) in FRAMEWORKS.items():
        added = median[wrapped] - median[bare]
        verdict = "within" if added * 1e6 <= GOAL_US else "over"
        print(f"  {framework:<18} {added * 1e6:7.1f} us = {added / median[DICT]:6.0f} dict "
              f"lookups   {verdict} the goal")  # fmt: skip
    entry_points = {wrapped: median[wrapped] for wrapped, _ in FRAMEWORKS.values()}
    print("broker round trip / in-process (medians)")
    for broker in ("broker http hook, keep-alive", "broker http hook, new connection"):
        for name, value in entry_points.items():
            print(f"  {broker:<34} / {name:<36} {median[broker] / value:6.1f}x")
    p99 = {name: percentile(values, 0.99) for name, values in samples.items()}
    worst = max(p99[name] for name in entry_points)
    print(f"  worst in-process p99 {worst * 1e6:.1f} us; keep-alive broker p99 "
          f"{p99['broker http hook, keep-alive'] * 1e6:.1f} us")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2_000)
    parser.add_argument("--quick", action="store_true", help="300 rounds")
    options = parser.parse_args()
    asyncio.run(bench(300 if options.quick else options.rounds))


if __name__ == "__main__":
    main()
