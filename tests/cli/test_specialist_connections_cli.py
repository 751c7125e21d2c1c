"""``--lane``, ``--base-url``, ``--api-key-env``, ``--output`` on the CLI, against a loopback
stand-in; ``specialist run`` shows the session whatever its outcome and exits by it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import Result

from active_memory.runlog import read_events
from active_memory.store.sqlite import SqliteStore
from agents.doubles import chat_completion
from agents.loopback_model import serving
from cli_runner import run_cli
from postmortem.postmortem_kit import first_run, graph_draft, seed

pytestmark = pytest.mark.timeout(60)


def _cli(*args: str) -> Result:
    return run_cli(list(args))


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_specialist_run_investigates_on_the_server_the_cli_names(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    with serving() as stand_in:
        result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "compatible",
                      "--base-url", f"{stand_in.url}/v1", "--model", "stand-in",
                      "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    host = stand_in.url.removeprefix("http://")
    assert f"model        openai/compatible stand-in at {host}, answer as tool" in out
    assert "session      2 turn(s), 1 tool call(s), tokens " in out
    assert ", 0 retries, no repair" in out
    assert '"lessons": []' in out
    assert "validation   accepted: 0 item(s) accepted, 0 rejected" in out


def test_specialist_run_prints_a_refused_answer_and_exits_1(tmp_path: Path) -> None:
    folder, record = first_run(tmp_path)
    store = tmp_path / "s.sqlite3"
    with SqliteStore(store) as opened:
        seed(opened, ("lesson-01JWNF15X00000000000000901", graph_draft(record)))
    with serving() as stand_in:
        result = _cli("specialist", "run", "graph_maintenance", str(folder), "--lane",
                      "anthropic", "--base-url", stand_in.url, "--model", "stand-in",
                      "--output", "prompted", "--store", str(store))  # fmt: skip
    assert result.exit_code == 1
    out = result.stdout
    assert "answer as prompted" in out
    assert '"decisions": []' in out  # the raw answer, although it was refused
    assert "validation   REFUSED as a whole" in out


def test_specialist_run_on_an_unreachable_server_says_why_and_exits_1(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    runtime = tmp_path / "runtime.json"
    # 4 s: on a loaded machine 1.5 s went by before the first request (the run then timed out
    # instead of being refused). The wait costs no CPU, and the suite is CPU-bound.
    runtime.write_text(json.dumps({"globalAgents": {"postmortem": {"timeoutMs": 4000}}}))
    port = _closed_port()
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "compatible",
                  "--base-url", f"http://127.0.0.1:{port}/v1", "--runtime", str(runtime),
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 1
    out = result.stdout
    assert "session      0 turn(s), 0 tool call(s), tokens 0/0" in out
    assert "answer       (none)" in out
    assert f"failed       failed (connection_refused): openai/compatible: connection refused by " \
           f"127.0.0.1:{port}" in out  # fmt: skip
    assert "more would pass the deadline" in out


def test_specialist_run_json_carries_the_failure_and_the_raw_answer(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    runtime = tmp_path / "runtime.json"
    # 4 s: on a loaded machine 1.5 s went by before the first request (the run then timed out
    # instead of being refused). The wait costs no CPU, and the suite is CPU-bound.
    runtime.write_text(json.dumps({"globalAgents": {"postmortem": {"timeoutMs": 4000}}}))
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "compatible",
                  "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--runtime",
                  str(runtime), "--store", str(tmp_path / "s.sqlite3"), "--json")  # fmt: skip
    assert result.exit_code == 1
    shown = json.loads(result.stdout)
    assert (shown["status"], shown["error_code"], shown["complete"]) == (
        "failed",
        "connection_refused",
        False,
    )
    assert (shown["answer"], shown["raw_answer"], shown["lane"]) == (None, None, "compatible")


def test_the_postmortem_run_log_names_lane_and_host_of_the_override(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    log = tmp_path / "run-log.jsonl"
    with serving() as stand_in:
        result = _cli("postmortem", str(folder), "--provider", "openai", "--base-url",
                      f"{stand_in.url}/v1", "--model", "stand-in", "--store",
                      str(tmp_path / "s.sqlite3"), "--run-log", str(log))  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = next(e for e in read_events(log) if e["event"] == "postmortem")
    host = stand_in.url.removeprefix("http://")
    assert (summary["provider"], summary["lane"], summary["host"], summary["model"]) == (
        "openai",
        "compatible",
        host,
        "stand-in",
    )
    assert f"source node  implement (openai/compatible stand-in at {host})" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--base-url", "ftp://127.0.0.1/v1"), "error: --base-url 'ftp://127.0.0.1/v1' must be"),
        (("--base-url", "http://u:p@127.0.0.1/v1"), "error: --base-url must not carry"),
        (("--provider", "anthropic", "--lane", "compatible"), "error: lane: 'compatible' is a"),
    ],
)
def test_a_bad_connection_option_is_bad_input_in_one_sentence(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("specialist", "run", "graph_discovery", str(folder), *args,
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_runtime_connection_entry_chooses_where_a_named_connection_goes(
    tmp_path: Path,
) -> None:
    folder, _ = first_run(tmp_path)  # its binding: anthropic, lane claude-code, ("github",)
    runtime = tmp_path / "runtime.json"
    with serving() as stand_in:
        entry = {"provider": "anthropic", "baseUrl": stand_in.url, "output": "native"}
        runtime.write_text(
            json.dumps({"globalAgents": {"postmortem": {"connections": {"github": entry}}}})
        )
        result = _cli("specialist", "run", "graph_discovery", str(folder), "--runtime",
                      str(runtime), "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
        seen = stand_in.seen
    assert result.exit_code == 0, result.stdout + result.stderr
    host = stand_in.url.removeprefix("http://")
    assert f"model        anthropic claude-sonnet-4-5 at {host}, answer as native" in result.stdout
    assert {path for path, _ in seen} == {"/v1/messages"}
    assert {key for _, key in seen} == {"Bearer unused"}  # no key variable named: none sent


def test_an_undeclared_connection_name_never_redirects_traffic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = first_run(tmp_path)
    with serving() as stand_in:
        monkeypatch.setenv("GITHUB_BASE_URL", stand_in.url)
        monkeypatch.setenv("GITHUB_API_KEY", "fake-github-key")
        # The record's lane is claude-code: --lane anthropic keeps the question on the API.
        result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane",
                      "anthropic", "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
        seen = stand_in.seen
    assert result.exit_code == 1
    assert result.stderr == "error: no Anthropic API key: set ANTHROPIC_API_KEY\n"
    assert seen == []


def _run_against(tmp_path: Path, status: int, body: dict[str, object], *args: str) -> Result:
    folder, _ = first_run(tmp_path)
    with serving(fixed=(status, body)) as server:
        return _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "compatible",
                    "--base-url", f"{server.url}/v1", "--model", "stand-in", *args,
                    "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip


def test_specialist_run_shows_prose_and_the_contract_errors_in_tool_mode(tmp_path: Path) -> None:
    prose = "sure! here you go {not json"
    result = _run_against(tmp_path, 200, chat_completion(content=prose))
    assert result.exit_code == 1
    out = result.stdout.splitlines()
    assert "answer as tool" in out[3]
    assert out[out.index("answer") + 1] == prose  # the model's own words, as it wrote them
    failed = next(line for line in out if line.startswith("failed "))
    assert failed.startswith("failed       failed (malformed_answer): the answer to contract")
    errors = [line for line in out if line.startswith("  error ")]
    assert errors == [
        "  error      the reply is text, not a JSON object: give the answer by calling the "
        "graph_discovery tool"
    ]


def test_specialist_run_json_keeps_prose_and_the_contract_errors(tmp_path: Path) -> None:
    prose = "I could not decide."
    result = _run_against(tmp_path, 200, chat_completion(content=prose), "--json")
    assert result.exit_code == 1
    shown = json.loads(result.stdout)
    assert (shown["answer"], shown["raw_answer"], shown["error_code"]) == (
        None,
        prose,
        "malformed_answer",
    )
    assert shown["contract_errors"] == [
        "the reply is text, not a JSON object: give the answer by calling the graph_discovery tool"
    ]


def test_specialist_run_lists_what_an_invalid_answer_broke(tmp_path: Path) -> None:
    answer = ("call_1", "graph_discovery", '{"lessons": "none"}')
    result = _run_against(tmp_path, 200, chat_completion(tool_calls=[answer]))
    assert result.exit_code == 1
    out = result.stdout
    assert '"lessons": "none"' in out
    assert "failed       failed (contract_violation): the answer did not satisfy" in out
    assert "  error      lessons: 'none' is not of type 'array'" in out


UNAUTHORIZED = {"error": {"message": "Invalid API key", "type": "invalid_request_error"}}


def test_a_refused_credential_names_what_the_user_typed(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    with serving(fixed=(401, UNAUTHORIZED)) as server:
        result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "compatible",
                      "--base-url", f"{server.url}/v1", "--model", "stand-in",
                      "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    host = server.url.removeprefix("http://")
    assert result.exit_code == 1
    failed = next(line for line in result.stdout.splitlines() if line.startswith("failed "))
    assert failed == (
        "failed       failed (auth_failed): openai/compatible refused the credential (HTTP 401: "
        f"Invalid API key); check the value of the API key for --base-url {host} (none is "
        "sent: name its variable with --api-key-env NAME)"
    )


def test_a_missing_key_variable_names_the_option_that_asked_for_it(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    result = _cli("specialist", "run", "graph_discovery", str(folder), "--lane", "compatible",
                  "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "LLAMA_KEY",
                  "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr == "error: no API key for --base-url 127.0.0.1:9: set LLAMA_KEY\n"


def test_the_postmortem_text_report_shows_each_failures_code_and_retries(tmp_path: Path) -> None:
    folder, _ = first_run(tmp_path)
    with serving(fixed=(401, UNAUTHORIZED)) as server:
        result = _cli("postmortem", str(folder), "--lane", "compatible", "--base-url",
                      f"{server.url}/v1", "--model", "stand-in",
                      "--store", str(tmp_path / "s.sqlite3"))  # fmt: skip
    assert result.exit_code == 1
    out = result.stdout.splitlines()
    assert out[1].startswith("status       failed in ")
    errors = out[out.index("errors") + 1 :]
    assert errors[0].startswith(
        "  graph_discovery: failed (auth_failed), 0 retries: openai/compatible refused the "
        "credential (HTTP 401: Invalid API key)"
    )
    assert errors[1].startswith("  repository_discovery: failed (auth_failed), 0 retries: ")
