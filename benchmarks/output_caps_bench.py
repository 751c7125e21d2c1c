"""Output caps benchmark: what a looping model can spend now, against one 16,384-token cap a turn.

Run: ``python benchmarks/output_caps_bench.py``.

1. The demo's recorded postmortems (``tests/fixtures/runs/*/exchanges.jsonl``, as re-recorded):
   the output tokens their requests asked for, as a share of 16,384 a request (the old cap).
2. A scripted model that writes one line until each turn's cap: the output tokens a session can
   generate before it ends (cut, repaired, cut again), per specialist contract and binding, as a
   share of the old worst case (two turns of 16,384, the answer turn and its repair).
3. The loop detector's cost on a reply of 256 KiB (the most it examines), per shape.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from active_memory.admission import wire_schema
from active_memory.agents.output_bounds import answer_bounds, max_serialized_bytes
from active_memory.agents.providers.base import AnswerContract, ModelRequest, ModelResponse
from active_memory.agents.repetition import find_repetition
from active_memory.agents.tool_loop import Session
from active_memory.errors import RepetitiveOutput
from active_memory.models.runs import Binding
from active_memory.roles import ROLE_ROWS
from active_memory.testing import ScriptedProvider

OLD_CAP = 16_384
RUNS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "runs"
LINE = "Let me look at the evidence file once more before I answer.\n"


def _recorded() -> None:
    asked = [
        json.loads(line)["request"]["max_tokens"]
        for path in sorted(RUNS.glob("*/exchanges.jsonl"))
        for line in path.read_text("utf-8").splitlines()
    ]
    share = sum(asked) / (OLD_CAP * len(asked))
    print(f"demo recordings: {len(asked)} requests ask for {share:.0%} of the old caps' tokens")


def _looping(request: ModelRequest) -> ModelResponse:
    return ModelResponse(
        text=LINE * (request.max_tokens * 4 // len(LINE)), stop_reason="max_tokens"
    )


async def _spent(name: str, maintenance: bool, binding: Binding) -> int:
    schema = wire_schema(name)
    provider = ScriptedProvider(_looping)
    session = Session(
        provider, binding, system="s", prompt="p", contract=AnswerContract(name, schema),
        deadline=time.monotonic() + 60,
        answer_bytes=max_serialized_bytes(schema, answer_bounds(maintenance=maintenance,
                                                                supplied=1)),
    )  # fmt: skip
    try:
        await session.run()
    except RepetitiveOutput:
        return sum(request.max_tokens for request in provider.requests)
    raise AssertionError("a session that loops on every turn must end in RepetitiveOutput")


def _looping_sessions() -> None:
    print("a model looping until each cap (one supplied lesson for maintenance):")
    for binding in (Binding(provider="scripted", model="m"),
                    Binding(provider="scripted", model="m", effort="high")):  # fmt: skip
        for row in ROLE_ROWS:
            spent = asyncio.run(_spent(row.name, row.maintenance, binding))
            effort = binding.effort or "no effort"
            print(
                f"  {row.name:<24} {effort:<10} {spent / (2 * OLD_CAP):.0%} of the old worst case"
            )


def _detector() -> None:
    size = 256 * 1024
    shapes = {
        "repeated line": LINE * (size // len(LINE)),
        "loop inside one line": '"exec:ex-1", ' * (size // 13),
        "no loop": "".join(f"line {index} of a varied reply\n" for index in range(size // 28)),
    }
    runs = 5
    for shape, text in shapes.items():
        started = time.perf_counter()
        for _ in range(runs):
            find_repetition(text)
        per_call = (time.perf_counter() - started) / runs
        print(f"detector, {shape:<21} {per_call * 1000:6.1f} ms for {len(text) // 1024} KiB")


if __name__ == "__main__":
    _recorded()
    _looping_sessions()
    _detector()
