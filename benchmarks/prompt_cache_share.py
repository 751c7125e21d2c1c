"""How much of the demo's postmortem input a prefix cache would serve.

    python benchmarks/prompt_cache_share.py

Replays the demo's two postmortems (the shipped recordings, first run then second, as
``active-memory demo`` does) through an inspecting provider that keeps every request, and lays
each request out as the Anthropic adapter sends it: tools, then the system prompt, then the
messages (``anthropic_wire.build_params``), its ``cache_control`` marks removed because the API
matches cached prefixes on content alone. A request's cacheable part is the longest prefix it
shares with any earlier request, of its own run or of the earlier run (earlier: the first run
before the second, and within a run an earlier turn, or the same turn of a specialist sorted
before it, as sessions started together advance turn by turn): what a provider's prefix
cache (Anthropic with the adapter's breakpoints, OpenAI's automatic caching, llama.cpp's prompt
reuse) could read instead of processing again.

Tokens are approximated as bytes / 4 (no tokenizer is involved; every figure here is a share,
so the approximation cancels out but for the different density of JSON and prose). Assumed:
the cache holds everything earlier in the replay (no expiry between the two postmortems, no
minimum cacheable length) and a changed ``tool_choice`` on a final turn costs nothing (Anthropic
documents that it can invalidate the cached messages, never the tools and system prompt).

Prints, per specialist and in total, the requests, the approximate input tokens and the share
served from the cache: over every request, over each session's first turn (served only by what
earlier sessions, of this run or the earlier one, share with it: the tools and the system
prompt, when they come first), and over the requests after each session's first turn, against
the goal of at least 70 % for the latter. Exit 1 when the goal is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import active_memory.demo as demo
from active_memory.agents.providers.anthropic_wire import build_params
from active_memory.agents.providers.base import ModelRequest, ModelResponse

GOAL = 0.70
BYTES_PER_TOKEN = 4


@dataclass(frozen=True)
class Sent:
    """One request as it went out: which run, specialist and turn, and its wire bytes."""

    run: str
    specialist: str
    batch: int
    turn: int
    wire: bytes


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def wire_bytes(request: ModelRequest) -> bytes:
    """The request's prefix-ordered content: tools, system, messages (parameters left out)."""
    params = _unmarked(build_params(request))
    ordered = [params.get("tools", []), params.get("system", []), *params["messages"]]
    return "\n".join(json.dumps(part, ensure_ascii=False) for part in ordered).encode("utf-8")


def _inspecting(sent: list[Sent]) -> type:
    """A stand-in for the demo's ReplayProvider that keeps every request it answers."""

    class Inspecting(demo.ReplayProvider):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            labels, run = request.labels, self.path.parent.name
            sent.append(
                Sent(run, labels.specialist, labels.batch, labels.turn, wire_bytes(request))
            )
            return await super().complete(request)

    return Inspecting


def replay_demo() -> list[Sent]:
    """Every request of the demo's two postmortems, in a fixed order (see :func:`in_step`)."""
    sent: list[Sent] = []
    original = demo.ReplayProvider
    demo.ReplayProvider = _inspecting(sent)  # type: ignore[misc]
    try:
        with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
            asyncio.run(demo.run_demo(Path(folder) / "demo"))
    finally:
        demo.ReplayProvider = original  # type: ignore[misc]
    return in_step(sent)


def in_step(sent: list[Sent]) -> list[Sent]:
    """The runs in the order they were replayed; within a run, turn by turn, each turn's
    sessions by specialist and batch. A postmortem starts its sessions together, so the order
    they happen to arrive in is the scheduler's, not the design's: this keeps the figures the
    same on every run of the benchmark."""
    runs = list(dict.fromkeys(request.run for request in sent))
    return sorted(sent, key=lambda r: (runs.index(r.run), r.turn, r.specialist, r.batch))


def _common_prefix(a: bytes, b: bytes) -> int:
    limit = min(len(a), len(b))
    low, high = 0, limit
    # Binary search on prefix equality: comparing slices is done in C.
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass
class Tally:
    requests: int = 0
    input_bytes: int = 0
    cached_bytes: int = 0
    later_bytes: int = 0
    later_cached_bytes: int = 0

    def add(self, sent: Sent, cached: int) -> None:
        self.requests += 1
        self.input_bytes += len(sent.wire)
        self.cached_bytes += cached
        if sent.turn > 1:
            self.later_bytes += len(sent.wire)
            self.later_cached_bytes += cached

    @property
    def first_bytes(self) -> int:
        return self.input_bytes - self.later_bytes

    @property
    def first_cached_bytes(self) -> int:
        return self.cached_bytes - self.later_cached_bytes


def tally(sent: list[Sent]) -> dict[str, Tally]:
    """Per specialist and ``total``: the bytes sent and the bytes a prefix cache would serve."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    for index, request in enumerate(sent):
        cached = max((_common_prefix(request.wire, earlier.wire) for earlier in sent[:index]),
                     default=0)  # fmt: skip
        tallies[request.specialist].add(request, cached)
        tallies["total"].add(request, cached)
    return dict(tallies)


def _share(part: int, whole: int) -> str:
    return f"{part / whole:6.1%}" if whole else "     -"


def main() -> int:
    sent = replay_demo()
    tallies = tally(sent)
    runs = sorted({request.run for request in sent})
    print(f"prompt cache share over the demo's postmortems ({', '.join(runs)}): "
          f"{len(sent)} requests, tokens approximated as bytes/{BYTES_PER_TOKEN}")  # fmt: skip
    print(f"{'specialist':<24} {'requests':>8} {'input tokens':>12} {'cached, all':>12} "
          f"{'first turns':>12} {'after turn 1':>13}")  # fmt: skip
    order = [*sorted(name for name in tallies if name != "total"), "total"]
    for name in order:
        t = tallies[name]
        print(f"{name:<24} {t.requests:>8} {t.input_bytes // BYTES_PER_TOKEN:>12} "
              f"{_share(t.cached_bytes, t.input_bytes):>12} "
              f"{_share(t.first_cached_bytes, t.first_bytes):>12} "
              f"{_share(t.later_cached_bytes, t.later_bytes):>13}")  # fmt: skip
    total = tallies["total"]
    later = total.later_cached_bytes / total.later_bytes if total.later_bytes else 0.0
    met = later >= GOAL
    print(f"goal: at least {GOAL:.0%} of input after the first turn served from the cache: "
          f"{later:.1%} ({'met' if met else 'missed'})")  # fmt: skip
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
