"""search_text with a model-chosen pattern: bounded in time, in size, and blind to secrets."""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.agents.providers.base import AnswerContract, ToolCall
from active_memory.agents.tool_loop import Session
from active_memory.agents.tools import Toolbox, ToolOutcome
from active_memory.agents.tools_search import Pattern, compile_pattern, search_files
from active_memory.errors import ProviderDeadlineExceeded
from active_memory.models.runs import Binding
from active_memory.testing import ScriptedProvider, tool_call, tool_calls_response

# Exponential backtracking in both the standard library and the regex engine (minutes on 40
# characters); ``(a+)+b`` is not enough, the regex engine answers it at once.
CATASTROPHIC = r"(a|aa)+b"
FAKE_TOKEN = "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake0000"
FAKE_KEY = [
    "-----BEGIN RSA PRIVATE KEY-----",
    *(f"FAKEKEYMATERIAL{n:02d}notarealkeyFAKEKEYMATERIAL" for n in range(6)),
    "-----END RSA PRIVATE KEY-----",
]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "slow.txt").write_text("a" * 40 + "\n")
    (tmp_path / "remote.cfg").write_text(
        f"[remote]\nurl = https://user:{FAKE_TOKEN}@github.com/org/repo.git\n"
    )
    (tmp_path / "deploy.pem").write_text("\n".join(FAKE_KEY) + "\n")
    (tmp_path / "hashes.txt").write_text("commit " + "0123456789abcdef" * 2 + "01234567\n")
    return tmp_path


async def _search(tools: Toolbox, pattern: str, **options: Any) -> ToolOutcome:
    arguments = {"root": "checkout", "pattern": pattern, "path": None, "regex": True}
    arguments["max_matches"] = None
    arguments.update(options.pop("arguments", {}))
    return await tools.run(ToolCall("c1", "search_text", json.dumps(arguments)), **options)


async def test_a_catastrophic_regex_comes_back_as_a_too_slow_error(checkout: Path) -> None:
    tools = Toolbox({"checkout": checkout}, max_match_seconds=0.2)

    outcome = await _search(
        tools, CATASTROPHIC, arguments={"path": "slow.txt"}, deadline=time.monotonic() + 30
    )

    assert outcome == ToolOutcome(
        "pattern too slow: matching one line of checkout:slow.txt took over 0.2 s; "
        "use a literal or simpler pattern",
        is_error=True,
    )


def test_a_session_whose_model_asks_for_a_catastrophic_regex_ends_at_its_deadline(
    checkout: Path, contract: AnswerContract
) -> None:
    search = {"root": "checkout", "pattern": CATASTROPHIC, "path": None, "regex": True}
    provider = ScriptedProvider(
        [tool_calls_response(tool_call("search_text", {**search, "max_matches": None}))]
    )
    threads_before = set(threading.enumerate())

    async def run_until_the_deadline() -> None:
        session = Session(
            provider,
            Binding(provider="scripted", model="model-x"),
            system="",
            prompt="Decide.",
            contract=contract,
            deadline=time.monotonic() + 0.5,
            toolbox=Toolbox({"checkout": checkout}),
        )
        with pytest.raises(ProviderDeadlineExceeded, match="during tool call 'search_text'"):
            await session.run()

    started = time.monotonic()
    # The tool runs in a daemon thread nobody waits for; the search itself must still stop.
    asyncio.run(run_until_the_deadline())
    for thread in set(threading.enumerate()) - threads_before:
        thread.join(timeout=10)

    # Generous: the bound is the deadline; the standard library took a minute here.
    assert time.monotonic() - started < 10
    assert set(threading.enumerate()) <= threads_before


async def test_a_search_that_meets_the_deadline_stops_with_what_it_found(
    checkout: Path,
) -> None:
    outcome = await _search(Toolbox({"checkout": checkout}), "x", deadline=time.monotonic())
    assert (
        outcome.content == "0 match(es) in 0 file(s); stopped at the session deadline\n(no matches)"
    )


async def test_an_over_long_pattern_is_refused(checkout: Path) -> None:
    outcome = await _search(Toolbox({"checkout": checkout}), "a" * 501, arguments={"regex": False})
    assert outcome.is_error
    assert outcome.content == "the pattern is 501 characters long; use at most 500"


async def test_counted_repetitions_that_would_blow_up_compilation_are_refused(
    checkout: Path,
) -> None:
    tools = Toolbox({"checkout": checkout})
    for pattern in ("a{4294967294}", "(?:x{300}){300}"):
        outcome = await _search(tools, pattern)
        assert outcome.is_error, pattern
        assert "repeats too much to compile" in outcome.content
        assert outcome.content.endswith("use smaller counts, + or *")

    usual = await _search(tools, r"\b[0-9a-f]{40}\b")
    assert usual.content.splitlines()[1].startswith("checkout:hashes.txt line 1: commit 0123")


async def test_matching_lines_are_shown_redacted(checkout: Path) -> None:
    outcome = await _search(
        Toolbox({"checkout": checkout}), "github.com", arguments={"regex": False}
    )
    assert outcome.content.splitlines()[1] == (
        "checkout:remote.cfg line 2: url = https://[redacted:url-credentials]@github.com/org/repo.git"
    )


async def test_a_match_found_only_inside_a_secret_is_not_reported(checkout: Path) -> None:
    tools = Toolbox({"checkout": checkout})
    # Probing a token one character at a time must learn nothing.
    probe = await _search(tools, "ghp_FAKEf")
    key = await _search(tools, "FAKEKEYMATERIAL03")
    assert probe.content == "0 match(es) in 4 file(s)\n(no matches)"
    assert key.content == "0 match(es) in 4 file(s)\n(no matches)"


LINE_PATTERNS = [
    r"a+b", r"^b", r"a$", r"\s+", r"b\s*$", r"(?:ab|ba)+", r"[^a]b", r"\bab\b", r"a.*b",
    r"(?s)a.*b", r"x*", r"^$", r"(?i)A\sB", r"[\s\S]{2}b", r"(?P<x>a)(?P=x)",
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="ab \r\n", max_size=60),
    pattern=st.sampled_from(LINE_PATTERNS),
)
def test_searching_the_whole_file_first_finds_exactly_the_lines_a_line_by_line_search_does(
    text: str, pattern: str
) -> None:
    compiled = compile_pattern(pattern, is_regex=True)
    assert compiled.whole_file, pattern
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sample.txt"
        path.write_bytes(text.encode())
        found = [
            search_files(
                [path],
                lambda path: "sample.txt",
                Pattern(compiled.compiled, whole_file=whole_file),
                wanted=100,
                deadline=None,
                match_seconds=2.0,
            )
            for whole_file in (True, False)
        ]
    assert found[0] == found[1]


@pytest.mark.parametrize(
    "pattern", [r"a(?!\s)", r"(?<=\n)b", r"\Aa", r"a\Z", r"a\Kb", r"(?r)ab", r"(?:ab){e<=1}"]
)
def test_patterns_that_look_beyond_their_line_are_searched_line_by_line(pattern: str) -> None:
    assert not compile_pattern(pattern, is_regex=True).whole_file
