"""The host examples of README.md, docs/postmortem.md and docs/recall.md run as written, inside
``asyncio.run`` (where ``hook_env`` used to raise "Cannot run the event loop while another loop
is running")."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import git
import pytest

from active_memory.demo import run_demo
from active_memory.hooks.install import helper_command
from active_memory.models.changes import Mutation, Publication
from active_memory.models.runs import Outcome
from active_memory.store.sqlite import SqliteStore
from postmortem.postmortem_kit import first_run
from recall.kit import REPOSITORY, lesson, lesson_id

ROOT = Path(__file__).resolve().parents[1]


def python_block(document: str, heading: str) -> str:
    """The first ```python block after ``heading`` in ``document``."""
    text = (ROOT / document).read_text("utf-8")
    after = text[text.index(heading + "\n") :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match is not None, f"no python block under {heading!r} in {document}"
    return match.group(1)


def test_the_readme_host_snippet_runs_inside_asyncio_run(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    snippet = python_block("README.md", "### In a host")
    assert "run.hook_env(" in snippet
    assert "await run.postmortem(record)" in snippet
    namespace: dict[str, Any] = {
        "run_id": record.run_id,
        "graph": record.graph,
        "checkout": folder / "checkout",
        "node_id": "implement",
        "conversation_id": "conv-implement-1",
        "authored": "Edit the repository...",
        "outcome": Outcome(status="succeeded", latched_ms=1748772087000),
        "record": record,
    }
    code = "async def snippet():\n" + textwrap.indent(snippet, "    ") + "    return locals()\n"
    exec(compile(code, "README.md", "exec"), namespace)
    done = asyncio.run(namespace["snippet"]())
    assert done["env"]["ACTIVE_MEMORY_BROKER"].startswith("127.0.0.1:")
    assert done["claude"].hook["url"].endswith("/hook/claude")
    # No provider key in a test: the postmortem reports that, it does not raise.
    assert done["report"].run_id == record.run_id
    assert done["report"].status == "failed"
    assert {s.error_code for s in done["report"].specialists} == {"provider_unavailable"}


def test_the_postmortem_doc_host_example_runs_and_prints_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(run_demo(tmp_path / "am-demo"))
    capsys.readouterr()
    heading = "## In a host (in-process)"
    example = python_block("docs/postmortem.md", heading)
    assert "run.hook_env(" in example
    text = (ROOT / "docs/postmortem.md").read_text("utf-8")
    shown = text[text.index("$ python host_example.py\n") :].split("\n```", 1)[0].splitlines()[1:]
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "docs/postmortem.md", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[:5] == shown[:5]

    def titles(lines: list[str]) -> list[str]:
        return sorted(re.sub(r"lesson-\w+@\d+ ", "", line) for line in lines[5:])

    assert titles(printed) == titles(shown)


class _Launched:
    def __init__(self, returncode: int) -> None:
        self.returncode = returncode

    async def wait(self) -> int:
        return self.returncode


def _post(hook: dict[str, Any], payload: dict[str, Any]) -> None:
    url = urlsplit(hook["url"])
    assert url.hostname is not None
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
    try:
        connection.request("POST", url.path, json.dumps(payload).encode(), hook["headers"])
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_the_recall_doc_wiring_example_runs_inside_asyncio_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checkout = tmp_path / "widgets"
    (checkout / "src").mkdir(parents=True)
    git.Repo.init(checkout).create_remote("origin", "https://github.com/acme/widgets.git")
    with SqliteStore() as store:  # the default store, which the example opens
        mutation = Mutation(op="upsert", id=lesson_id(1), expected_revision=0,
                            draft=lesson(1, files=["src/a.py"]).draft)  # fmt: skip
        store.publish(Publication(run_id="seed", mutations=(mutation,)))
    launched: list[tuple[list[str], dict[str, str]]] = []

    async def fake_exec(*argv: str, cwd: str, env: dict[str, str]) -> _Launched:
        """Each CLI makes one Read-like call through the hook it was wired with."""
        launched.append((list(argv), env))
        target = str(Path(cwd) / "src" / "a.py")
        if argv[0] == "claude":
            settings = json.loads(Path(argv[argv.index("--settings") + 1]).read_text("utf-8"))
            hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]
            payload = {"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
                       "tool_name": "Read", "tool_input": {"file_path": target}}  # fmt: skip
            await asyncio.to_thread(_post, hook, payload)
        elif argv[0] in ("codex", "copilot"):
            # The hook `hooks install` writes asks the broker the env names, as this does.
            if argv[0] == "codex":
                payload = {
                    "session_id": "s",
                    "cwd": cwd,
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": "cat src/a.py"},
                }
            else:
                payload = {"sessionId": "s", "timestamp": 1, "cwd": cwd, "toolName": "view",
                           "toolArgs": {"path": target}}  # fmt: skip
            done = await asyncio.to_thread(
                subprocess.run, helper_command(argv[0]), shell=True, env=env, text=True,
                input=json.dumps(payload), capture_output=True, timeout=30, check=False,
            )  # fmt: skip
            assert lesson_id(1) in done.stdout, done.stderr
        return _Launched(0)

    monkeypatch.setattr(asyncio, "create_subprocess_exec", fake_exec)
    monkeypatch.chdir(checkout)
    example = python_block("docs/recall.md", "## Wiring a harness from a host")
    exec(compile(example, "docs/recall.md", "exec"), {"__name__": "__main__"})
    names = [argv[0] for argv, _ in launched]
    assert names == ["claude", "codex", "copilot", "pi"]
    pi_argv = launched[3][0]
    assert pi_argv[1] == "-e"
    assert Path(pi_argv[2]).is_file()
    printed = capsys.readouterr().out.splitlines()
    key = f"{lesson_id(1)}@1"
    assert printed == [
        f"implement conv-implement-1 {key}",
        f"review conv-review-1 {key}",
        f"review conv-review-2 {key}",
        "3 tool calls",
    ]
    assert REPOSITORY == "forge:github.com/acme/widgets"
