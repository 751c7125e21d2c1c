"""docs/providers.md: the provider interface, a declared connection, the errors of missing
settings, and a session against the loopback stand-in model."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

import pytest

from active_memory.agents.providers import base
from active_memory.agents.providers.registry import Connection, create_provider
from active_memory.errors import ActiveMemoryError
from active_memory.models.config import parse_runtime_config
from active_memory.models.runs import Binding
from active_memory.postmortem.binding import BindingOverride
from docs.compare import compare
from docs.conftest import DEMO_DIR
from docs.pages import claim, output
from docs.transcript import BIN, run_transcript
from fake_claude import install_fake_claude, success
from fake_codex import install_fake_codex, success as codex_success
from fake_copilot import install_fake_copilot, success as copilot_success
from fake_pi import install_fake_pi, success as pi_success

PAGE = "docs/providers.md"
PROTOCOL = claim(PAGE, "protocol")
CONNECTIONS = claim(PAGE, "connections")
MISSING_SETTINGS = output(PAGE, "missing-settings")
STAND_IN_SESSION = claim(PAGE, "stand-in")
TEXT_CALLS_SESSION = claim(PAGE, "text-calls")


def test_the_interface_shown_is_the_provider_protocol() -> None:
    namespace: dict[str, Any] = {name: getattr(base, name) for name in
                                 ("Protocol", "ModelRequest", "ModelResponse")}  # fmt: skip
    exec(compile(PROTOCOL.body, PROTOCOL.where, "exec"), namespace)
    shown = inspect.signature(namespace["ModelProvider"].complete, eval_str=True)
    real = inspect.signature(base.ModelProvider.complete, eval_str=True)
    assert shown == real
    assert inspect.iscoroutinefunction(base.ModelProvider.complete)


def test_the_declared_connection_is_a_valid_runtime() -> None:
    runtime = parse_runtime_config(json.loads(CONNECTIONS.body))
    [connection] = runtime.postmortem.connections.values()
    assert (connection.provider, connection.lane, connection.api_key_env) == (
        "openai", "compatible", "LLAMA_KEY"
    )  # fmt: skip


def _failure(make: Any) -> str:
    try:
        make()
    except ActiveMemoryError as error:
        return f"{type(error).__name__}: {error}"
    raise AssertionError("no error")


@pytest.mark.slow
def test_each_missing_setting_fails_in_the_sentence_the_page_shows() -> None:
    """Slow: on its own, resolving a binding imports its SDK (about 2 s for anthropic) before it
    reads the key; in the whole suite the SDKs are usually imported already."""
    llama = Connection("local-llama", provider="openai", lane="compatible",
                       base_url="http://127.0.0.1:8080/v1", api_key_env="LLAMA_KEY")  # fmt: skip
    claude = Binding(provider="anthropic", model="claude-sonnet-4-5")
    cases = [
        lambda: create_provider(claude, env={}),
        lambda: create_provider(claude.model_copy(update={"lane": "bedrock"}), env={}),
        lambda: create_provider(Binding(provider="openai", model="gpt-5.1", lane="azure"), env={}),
        lambda: create_provider(
            Binding(provider="openai", model="qwen", connections=("local-llama",)),
            env={},
            connections={"local-llama": llama},
        ),
        lambda: create_provider(Binding(provider="openai", model="gpt-5.1", effort="extreme")),
        lambda: create_provider(Binding(provider="mistral", model="large"), env={}),
        lambda: create_provider(claude.model_copy(update={"lane": "compatible"}), env={}),
        lambda: BindingOverride(provider="anthropic", lane="compatible").apply(claude),
    ]
    printed = "\n".join(_failure(case) for case in cases)
    compare(MISSING_SETTINGS, MISSING_SETTINGS.body, printed)


def test_specialist_run_against_the_stand_in_prints_its_session(
    demo: Path, stand_in: str, tmp_path: Path
) -> None:
    aliases = {DEMO_DIR: str(demo), "127.0.0.1:18089": stand_in}
    run_transcript(STAND_IN_SESSION, tmp_path, aliases=aliases)


def test_specialist_run_takes_the_calls_a_small_model_writes_as_text(
    demo: Path, text_calls_stand_in: str, tmp_path: Path
) -> None:
    aliases = {DEMO_DIR: str(demo), "127.0.0.1:18090": text_calls_stand_in}
    run_transcript(TEXT_CALLS_SESSION, tmp_path, aliases=aliases)


CACHE_SHARE = claim(PAGE, "cache-share")


def test_the_cache_share_benchmark_prints_what_the_page_shows() -> None:
    """Run from the repository root, as the page's command is (the demo's recordings replayed)."""
    run_transcript(CACHE_SHARE, Path(__file__).resolve().parents[2])


CLAUDE_CODE_LANE = claim(PAGE, "claude-code-lane")
CLAUDE_CODE_MISSING = claim(PAGE, "claude-code-missing")


def test_specialist_run_on_the_claude_code_lane_prints_its_session(
    demo: Path, tmp_path: Path
) -> None:
    readme = demo / "first" / "checkout" / "pyproject.toml"
    fake = install_fake_claude(tmp_path / "bin", [success({"lessons": []}, reads=[str(readme)])])
    env = {"PATH": os.pathsep.join((str(BIN), str(fake.folder), "/usr/bin", "/bin"))}
    run_transcript(CLAUDE_CODE_LANE, tmp_path, env=env, aliases={DEMO_DIR: str(demo)})
    [call] = fake.calls()
    assert call["cwd"] == str((demo / "first" / "checkout").resolve())


def test_the_claude_code_lane_without_claude_is_one_sentence(demo: Path, tmp_path: Path) -> None:
    env = {"PATH": os.pathsep.join((str(BIN), "/usr/bin", "/bin"))}
    run_transcript(CLAUDE_CODE_MISSING, tmp_path, env=env, aliases={DEMO_DIR: str(demo)})


CODEX_LANE = claim(PAGE, "codex-lane")
CODEX_MISSING = claim(PAGE, "codex-missing")


def test_specialist_run_on_the_codex_lane_prints_its_session(demo: Path, tmp_path: Path) -> None:
    reply = codex_success({"lessons": []}, commands=[("cat README.md", 0)])
    fake = install_fake_codex(tmp_path / "bin", [reply])
    env = {"PATH": os.pathsep.join((str(BIN), str(fake.folder), "/usr/bin", "/bin"))}
    run_transcript(CODEX_LANE, tmp_path, env=env, aliases={DEMO_DIR: str(demo)})
    [call] = fake.calls()
    assert call["cwd"] == str((demo / "first" / "checkout").resolve())
    assert call["argv"][:2] == ["exec", "--json"]


def test_the_codex_lane_without_codex_is_one_sentence(demo: Path, tmp_path: Path) -> None:
    env = {"PATH": os.pathsep.join((str(BIN), "/usr/bin", "/bin"))}
    run_transcript(CODEX_MISSING, tmp_path, env=env, aliases={DEMO_DIR: str(demo)})


COPILOT_LANE = claim(PAGE, "copilot-lane")


def test_specialist_run_on_the_copilot_lane_prints_its_session(demo: Path, tmp_path: Path) -> None:
    reply = copilot_success({"lessons": []}, calls=[("view", {"path": "README.md"}, True)])
    fake = install_fake_copilot(tmp_path / "bin", [reply])
    env = {"PATH": os.pathsep.join((str(BIN), str(fake.folder), "/usr/bin", "/bin"))}
    run_transcript(COPILOT_LANE, tmp_path, env=env, aliases={DEMO_DIR: str(demo)})
    [call] = fake.calls()
    assert call["cwd"] == str((demo / "first" / "checkout").resolve())
    assert "--available-tools" in call["argv"]


PI_LANE = claim(PAGE, "pi-lane")


def test_specialist_run_on_the_pi_lane_prints_its_session(demo: Path, tmp_path: Path) -> None:
    reply = pi_success({"lessons": []}, calls=[("read", {"path": "README.md"}, True)])
    fake = install_fake_pi(tmp_path / "bin", [reply])
    env = {"PATH": os.pathsep.join((str(BIN), str(fake.folder), "/usr/bin", "/bin"))}
    run_transcript(PI_LANE, tmp_path, env=env, aliases={DEMO_DIR: str(demo)})
    [call] = fake.calls()
    assert call["cwd"] == str((demo / "first" / "checkout").resolve())
    assert "--no-extensions" in call["argv"]
