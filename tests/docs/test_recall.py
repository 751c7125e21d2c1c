"""docs/recall.md: the host snippets, the standalone hook, `serve`, `hooks install` and
`recall`, on a widgets checkout and a store of four lessons about it."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import git
import pytest

from active_memory.hooks.install import helper_command
from active_memory.models.changes import Mutation, Publication
from active_memory.store.sqlite import SqliteStore
from docs.compare import compare
from docs.pages import claim
from docs.scenes import INSTALL_ALIASES, REPOSITORY, Scene, widgets
from docs.transcript import run_python, unalias
from recall.kit import lesson, lesson_id

PAGE = "docs/recall.md"
HOST = claim(PAGE, "host")
WIRING = claim(PAGE, "wiring")
STANDALONE = claim(PAGE, "standalone")
SERVE = claim(PAGE, "serve")
INSTALL = claim(PAGE, "install")
CODEX_COMMAND = claim(PAGE, "codex-command")
RECALL = claim(PAGE, "recall")
RECALL_BUDGET = claim(PAGE, "recall-budget")
SHOWN = "/tmp/demo"  # the pages' folder: widgets/ and the state directory state/
# The command `hooks install` wrote, for the page's `<that command>`.
THAT_COMMAND = (
    'sh -c "$(python -c \'import json; print(json.load(open("widgets/.claude/settings.local.json'
    '"))["hooks"]["PreToolUse"][0]["hooks"][0]["command"])\')"'
)
LESSONS = (
    lesson(1, files=["src/widgets/config.py"], title="Config loads lazily",
           recommendation="Call load_config() inside the function that needs it; importing "
           "settings at module level breaks the test fixtures."),
    lesson(2, folders=["src/widgets/storage"], title="Storage writes are batched",
           recommendation="Flush the BlobWriter before asserting on stored objects; writes are "
           "buffered until flush() or close()."),
    lesson(3, identifiers=["configure_bedrock"], title="configure_bedrock needs a region",
           recommendation="Pass region= explicitly; the default comes from AWS_REGION, which CI "
           "leaves unset."),
    lesson(4, keyword_groups=[["bedrock", "region"]], title="Bedrock region comes from the env",
           recommendation="Set AWS_REGION in the test environment before making a client."),
)  # fmt: skip


@pytest.fixture
def scene(tmp_path: Path, isolated_state: dict[str, Path]) -> Scene:
    """The page's /tmp/demo: widgets/, read.json, and the default store under state/."""
    state = tmp_path / "state"
    checkout = widgets(tmp_path, state / "active-memory" / "lessons.sqlite3", LESSONS)
    target = str(checkout / "src/widgets/config.py")
    read = {"session_id": "s1", "cwd": str(checkout), "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": target}}  # fmt: skip
    (tmp_path / "read.json").write_text(json.dumps(read), "utf-8")
    env = {"XDG_STATE_HOME": str(state), "ACTIVE_MEMORY_STATE_DIR": str(state / "active-memory")}
    aliases = {SHOWN: str(tmp_path), "/home/dev": str(isolated_state["HOME"]), **INSTALL_ALIASES}
    return Scene(tmp_path, env, aliases)


def test_the_host_snippet_opens_a_run_and_keeps_its_deliveries(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_STATE_DIR", scene.env["ACTIVE_MEMORY_STATE_DIR"])
    namespace: dict[str, Any] = {
        "compiled_graph_hash": "b" * 64,
        "checkout": scene.folder / "widgets",
        "conversation_id": "conv-build-1",
        "execution_id": "ex-build-1",
        "authored_prompt": "Build the widgets.",
    }
    run_python(HOST, namespace)
    assert namespace["env"]["ACTIVE_MEMORY_NODE"] == "build"
    assert namespace["prompt"].startswith("Build the widgets.")
    assert namespace["manifest"] == ()
    assert namespace["receipts"] == ()


def test_a_standalone_hook_then_serve_then_codex_as_the_page_shows(scene: Scene) -> None:
    scene.run(STANDALONE, aliases={"<that command>": THAT_COMMAND})
    scene.serve(SERVE)
    scene.run(INSTALL)
    hooks = json.loads((scene.folder / "widgets/.codex/hooks.json").read_text("utf-8"))
    command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    compare(CODEX_COMMAND, CODEX_COMMAND.body, unalias(command, scene.aliases))
    # And it runs: with no broker, the helper reads the store itself.
    payload = {"session_id": "s2", "cwd": str(scene.folder / "widgets"),
               "hook_event_name": "PreToolUse", "tool_name": "Bash",
               "tool_input": {"command": "cat src/widgets/config.py"}}  # fmt: skip
    done = subprocess.run(["sh", "-c", command], input=json.dumps(payload), text=True,
                          capture_output=True, timeout=30, check=True)  # fmt: skip
    assert f"[{lesson_id(1)}@1] Config loads lazily" in json.loads(done.stdout)[
        "hookSpecificOutput"]["additionalContext"]  # fmt: skip


def test_recall_shows_the_frame_and_the_report(scene: Scene) -> None:
    scene.run(RECALL)
    scene.run(RECALL_BUDGET)


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


def test_the_wiring_example_runs_inside_asyncio_run(
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
    exec(compile(WIRING.body, WIRING.where, "exec"), {"__name__": "__main__"})
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
