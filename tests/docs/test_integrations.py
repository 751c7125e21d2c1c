"""docs/integrations.md: each example, after the set-up, runs as a program of its own (the real
package, a fake model or, for the Claude Agent SDK, a loopback stand-in of the Anthropic API)
and prints exactly the output the page shows."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import active_memory
from docs.compare import compare
from docs.pages import claim, output
from integrations.anthropic_stand_in import AnthropicStandIn, ToolCall, claude_cli

PAGE = "docs/integrations.md"
SOURCES = str(Path(active_memory.__file__).resolve().parents[1])
DISTRIBUTIONS = {
    "claude-agent-sdk": "claude-agent-sdk",
    "openai-agents": "openai-agents",
    "langgraph": "langgraph",
}
SETUP = claim(PAGE, "setup")
EXAMPLES = {name: claim(PAGE, name) for name in DISTRIBUTIONS}
OUTPUTS = {name: output(PAGE, name) for name in DISTRIBUTIONS}


def _run(script: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    program = folder / "example.py"
    program.write_text(script, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(program)],
        env={**os.environ, "PYTHONPATH": SOURCES, **env},
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_the_page_has_a_set_up_and_an_example_and_output_per_framework() -> None:
    assert SETUP.lang == "python"
    assert {name: block.lang for name, block in EXAMPLES.items()} == dict.fromkeys(
        DISTRIBUTIONS, "python"
    )
    assert set(OUTPUTS) == set(DISTRIBUTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_each_example_prints_what_the_page_shows(name: str, tmp_path: Path) -> None:
    """Slow: each example is a Python process of its own that imports its SDK, and the Claude
    Agent SDK's also starts the Claude Code CLI (3 to 8 s each)."""
    try:
        importlib.metadata.distribution(DISTRIBUTIONS[name])
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"the {name} extra is not installed")
    script = SETUP.body + "\n\n" + EXAMPLES[name].body + "\n"
    if name != "claude-agent-sdk":
        done = _run(script, tmp_path, {})
    else:
        cli = claude_cli()
        if cli is None:
            pytest.skip("neither the SDK's bundled Claude Code CLI nor the npm package is there")
        # The CLI the SDK spawns (found on PATH when it is not the bundled one) talks to a
        # loopback stand-in for the Anthropic API.
        reads = {"src/blob.py": [ToolCall("Read", {"file_path": "src/blob.py"})]}
        with AnthropicStandIn(reads) as stand_in:
            home = tmp_path / "home"
            done = _run(script, tmp_path, {
                "ANTHROPIC_BASE_URL": stand_in.url,
                "ANTHROPIC_API_KEY": "sk-ant-docs-stand-in",
                "CLAUDE_CONFIG_DIR": str(home / ".claude"),
                "HOME": str(home),
                "PATH": os.pathsep.join((str(Path(cli).parent), os.environ.get("PATH", ""))),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
            })  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    compare(OUTPUTS[name], OUTPUTS[name].body, done.stdout)
