"""A command loads and builds only what it uses: models build their validators on first use (from
any thread), and the layers a command imports but never runs (the HTTP service for the token
commands, the serve broker for ``hooks install``, the card screens and GitPython for a
specialist's prompt) stay unloaded. Each probe runs in a fresh interpreter, as this test
process has imported everything already."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cli_runner import run_cli
from start_probe import command_stderr, loaded_by, loaded_by_command, probe


def test_models_build_their_validators_on_first_use_even_from_many_threads_at_once() -> None:
    code = (
        "import json, sys, threading\n"
        "from active_memory.models.lessons import Card, Evidence, Lesson, LessonDraft\n"
        "models = (Card, Evidence, Lesson, LessonDraft)\n"
        "built_at_import = [m.__pydantic_complete__ for m in models]\n"
        "data = {'scope': {'kind': 'repository', 'repository': 'forge:example.com/a/b',\n"
        "        'files': ['src/app.py']}, 'title': 'Run the schema check before editing models',\n"
        "        'recommendation': 'Run make schema after editing src/app.py.',\n"
        "        'evidence': {'run_id': 'run-1', 'references': ['exec:e1'], 'reason': 'seen'}}\n"
        "start, results = threading.Barrier(8), []\n"
        "def first_use():\n"
        "    start.wait()\n"
        "    try:\n"
        "        results.append(LessonDraft.parse(data).model_dump(mode='json'))\n"
        "    except Exception as error:\n"
        "        results.append(repr(error))\n"
        "threads = [threading.Thread(target=first_use) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(json.dumps({'built_at_import': built_at_import, 'results': results,\n"
        "                  'built_after': LessonDraft.__pydantic_complete__}))\n"
    )
    found = probe(code)
    assert isinstance(found, dict)
    assert found["built_at_import"] == [False, False, False, False]
    assert found["built_after"] is True
    results = found["results"]
    assert len(results) == 8
    assert all(result == results[0] for result in results), results
    assert isinstance(results[0], dict), results[0]
    assert results[0]["title"] == "Run the schema check before editing models"


def test_hooks_install_does_not_load_the_serve_broker(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    argv = ["hooks", "install", "--harness", "claude", "--project", str(project)]
    argv += ["--store", str(tmp_path / "lessons.sqlite3")]
    unused = ("asyncio", "active_memory.recall.broker", "active_memory.models.config")
    assert loaded_by_command(argv, unused) == []
    assert (project / ".claude" / "settings.local.json").is_file()  # the command did its work


def test_the_token_commands_do_not_load_the_http_service() -> None:
    pytest.importorskip("psycopg_pool", reason="the [server] extra is not installed")
    code = (
        "from active_memory.cli.server import _server_modules\n"
        "from active_memory.server.credentials import CredentialStore\n"
        "_server_modules()"
    )
    unused = ("starlette", "uvicorn", "active_memory.server.app", "active_memory.screening")
    assert loaded_by(code, unused) == []


def test_a_missing_server_module_is_named_without_importing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("psycopg", reason="the [server] extra is not installed")
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # what `import uvicorn` refuses
    result = run_cli(["server", "token", "list", "--database", "postgresql://nobody@/none"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: the memory service needs uvicorn; install it with "
        "pip install 'active-memory[server]'\n"
    )


def test_a_specialist_session_module_loads_neither_the_screens_nor_git() -> None:
    # specialist prompt, evidence and every command that imports admission without admitting.
    code = "import active_memory.agents.specialists, active_memory.admission.validate"
    unused = (
        "git",
        "active_memory.screening.instructions",
        "active_memory.screening.verdict",
        "active_memory.admission.graph_advice",
    )
    assert loaded_by(code, unused) == []


def test_serve_names_a_missing_dependency_of_the_http_stack() -> None:
    pytest.importorskip("psycopg", reason="the [server] extra is not installed")
    # anyio refused, as `import anyio` would refuse when it is not installed: starlette, present
    # and found by a mere lookup, then cannot import, and `server serve` says so in one sentence
    # rather than a traceback.
    argv = ["server", "serve", "--database", "postgresql://nobody@/none"]
    assert command_stderr(argv, before="import sys; sys.modules['anyio'] = None") == (
        "error: the memory service needs anyio; install it with "
        "pip install 'active-memory[server]'\n"
    )
