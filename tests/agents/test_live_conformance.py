"""Opt-in live conformance: one specialist on a bundled run against a real loopback server.

Set ``ACTIVE_MEMORY_LIVE_BASE_URL`` (a loopback URL: ``http://127.0.0.1:8080/v1`` for an
OpenAI-compatible server, ``http://127.0.0.1:8080`` for an Anthropic-compatible one),
``ACTIVE_MEMORY_LIVE_MODEL`` and ``ACTIVE_MEMORY_LIVE_LANE`` (``compatible``, ``openai`` or
``anthropic``); optionally ``ACTIVE_MEMORY_LIVE_OUTPUT`` (``tool``, ``native``, ``prompted``)
and ``ACTIVE_MEMORY_LIVE_API_KEY`` (for a server that wants one). The test then runs the
graph discovery specialist of the bundled demo run through the same path as ``active-memory
specialist run --lane … --base-url … --model …`` and checks that at least one tool call
round-trips, that the answer validates against the contract, and that usage is reported. It
prints how many calls the model wrote as text (taken as calls on the compatible lane) and the
model the server answered as.

The variables are read when the module is imported: every test then runs with the
``ACTIVE_MEMORY_*`` settings scrubbed. The server must be on loopback: no test leaves it.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from active_memory.demo import load_bundle, materialize_run
from active_memory.models.config import parse_runtime_config
from active_memory.models.runs import load_run_record
from active_memory.postmortem.binding import BindingOverride
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.specialist_trial import TrialResult, try_specialist
from active_memory.store.sqlite import SqliteStore

BASE_URL = os.environ.get("ACTIVE_MEMORY_LIVE_BASE_URL", "").strip()
MODEL = os.environ.get("ACTIVE_MEMORY_LIVE_MODEL", "").strip()
LANE = os.environ.get("ACTIVE_MEMORY_LIVE_LANE", "").strip()
OUTPUT = os.environ.get("ACTIVE_MEMORY_LIVE_OUTPUT", "").strip() or None
API_KEY = os.environ.get("ACTIVE_MEMORY_LIVE_API_KEY", "").strip() or None
KEY_VARIABLE = "ACTIVE_MEMORY_TEST_LIVE_KEY"
SPECIALIST = "graph_discovery"


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def run_live_check(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    base_url: str,
    model: str,
    lane: str,
    output: str | None = None,
    api_key: str | None = None,
    text_calls: bool | None = None,
) -> TrialResult:
    """One specialist of the bundled demo run against ``base_url``, as the CLI would run it."""
    if api_key is not None:
        monkeypatch.setenv(KEY_VARIABLE, api_key)
    folder, _ = materialize_run(load_bundle("first"), tmp_path / "run")
    record = load_run_record(folder)
    config = parse_runtime_config(record.runtime)
    override = BindingOverride(
        model=model,
        lane=lane,
        base_url=base_url,
        api_key_env=KEY_VARIABLE if api_key is not None else None,
        output=output,
        text_calls=text_calls,
    )
    with SqliteStore(tmp_path / "lessons.sqlite3") as store:
        options = PostmortemOptions(
            config=config, backend=store, private_dir=tmp_path / "evidence", override=override
        )
        return await try_specialist(record, SPECIALIST, options)


def assert_conformant(result: TrialResult) -> None:
    assert result.error is None, f"{result.error_code}: {result.error}"
    assert result.tool_calls >= 1, "the specialist never investigated"
    assert result.turns >= 2, "no turn followed the tool call"
    assert result.complete, f"the answer was refused as a whole: {result.rejections}"
    assert result.input_tokens > 0, "no input usage reported"
    assert result.output_tokens > 0, "no output usage reported"


@pytest.mark.timeout(900)
@pytest.mark.skipif(
    not (BASE_URL and MODEL and LANE),
    reason="set ACTIVE_MEMORY_LIVE_BASE_URL, ACTIVE_MEMORY_LIVE_MODEL and "
    "ACTIVE_MEMORY_LIVE_LANE to run a specialist against a local model server",
)
async def test_a_specialist_investigates_and_answers_on_a_live_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _loopback(BASE_URL):
        pytest.fail(f"ACTIVE_MEMORY_LIVE_BASE_URL {BASE_URL!r} is not a loopback address")
    result = await run_live_check(
        tmp_path,
        monkeypatch,
        base_url=BASE_URL,
        model=MODEL,
        lane=LANE,
        output=OUTPUT,
        api_key=API_KEY,
    )
    print(
        f"\nlive: {result.provider}/{result.lane} {result.model} at {result.host}, answer as "
        f"{result.output}: {result.turns} turn(s), {result.tool_calls} tool call(s) "
        f"({result.text_calls} written as text), answered as {result.answered_model}, tokens "
        f"{result.input_tokens}/{result.output_tokens}, retries {result.retries}, repaired "
        f"{result.repaired}"
    )
    assert_conformant(result)
