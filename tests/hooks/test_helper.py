"""The command helper as a harness runs it: a real subprocess fed a real payload."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from active_memory.harnesses import HARNESS_NAMES
from active_memory.hooks import helper
from active_memory.hooks.dispatch import encode, harness_adapter
from active_memory.host import ActiveRun, open_run
from active_memory.lanes import SPECIALIST_SESSION_VARIABLE
from active_memory.models.config import RuntimeConfig
from active_memory.recall import wire
from active_memory.store.backend import RunIdentity
from recall.kit import REPOSITORY, WORKSPACE, FakeBackend, lesson_id, widgets_lessons

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"
HELPER = Path(helper.__file__)
CLEAN_ENV = {key: value for key, value in os.environ.items()
             if not key.startswith("ACTIVE_MEMORY_")}  # fmt: skip


@pytest.fixture
def run() -> Iterator[ActiveRun]:
    identity = RunIdentity("run-1", repository=REPOSITORY)
    with open_run(identity, RuntimeConfig(), FakeBackend(widgets_lessons()), WORKSPACE) as active:
        yield active


def run_helper(
    harness: str, payload: bytes, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-I", "-S", str(HELPER), harness, *args]
    return subprocess.run(
        command, input=payload, env={**CLEAN_ENV, **env}, capture_output=True, timeout=20
    )


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def wait_for(check: object, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    return bool(check())  # type: ignore[operator]


def test_helper_relays_the_broker_answer_and_acknowledges_it(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1", "exec-7")
    done = run_helper("claude", fixture("claude/read.json"), env)
    assert done.returncode == 0
    answer = json.loads(done.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert f"[{lesson_id(1)}@1] Config loads lazily" in context
    assert wait_for(lambda: len(run.deliveries) == 1)
    delivery = run.deliveries[0]
    assert (delivery.lesson_id, delivery.node_id, delivery.conversation_id, delivery.channel,
            delivery.execution) == (lesson_id(1), "build", "conv-1", "hook", "exec-7")  # fmt: skip
    assert [(r.tool, r.paths, r.execution) for r in run.receipts] == [
        ("Read", ("src/widgets/config.py",), "exec-7")
    ]
    again = run_helper("claude", fixture("claude/read.json"), env)
    assert json.loads(again.stdout) == {}


def test_a_specialist_session_gets_no_card_and_sends_nothing(run: ActiveRun) -> None:
    """A harness lane marks its specialist's session; where the harness still runs the user's
    own hooks (Copilot CLI), the helper answers empty without asking the broker."""
    env = run.hook_env("build", "conv-1", "exec-7")
    marked = run_helper("copilot", fixture("copilot/view.json"),
                        {**env, SPECIALIST_SESSION_VARIABLE: "1"})  # fmt: skip
    assert (marked.returncode, json.loads(marked.stdout)) == (0, {})
    assert not run.receipts
    assert not run.deliveries
    unmarked = run_helper("copilot", fixture("copilot/view.json"),
                          {**env, SPECIALIST_SESSION_VARIABLE: "0"})  # fmt: skip
    assert f"[{lesson_id(1)}@1]" in unmarked.stdout.decode()


def test_the_helper_s_specialist_variable_is_the_lanes_one() -> None:
    assert helper.SPECIALIST_SESSION_VARIABLE == SPECIALIST_SESSION_VARIABLE


def test_helper_reads_the_broker_from_a_ticket(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1")
    ticket = env["ACTIVE_MEMORY_TICKET"]
    done = run_helper("codex", fixture("codex/apply_patch.json"), {}, "--ticket", ticket)
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert lesson_id(1) in context
    assert lesson_id(2) in context


def test_helper_with_the_broker_down_prints_empty_and_exits_zero(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1")
    run.close()
    started = time.monotonic()
    done = run_helper("claude", fixture("claude/read.json"), env)
    elapsed = time.monotonic() - started
    assert (done.returncode, json.loads(done.stdout), done.stderr) == (0, {}, b"")
    # Not a benchmark: a refused connection must not wait out anything near a second.
    assert elapsed < 2


def test_helper_gives_up_on_a_broker_that_never_answers() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        host, port = silent.getsockname()
        env = {"ACTIVE_MEMORY_BROKER": f"{host}:{port}", "ACTIVE_MEMORY_TOKEN": "t"}
        started = time.monotonic()
        done = run_helper("copilot", fixture("copilot/view.json"), env)
        elapsed = time.monotonic() - started
    assert (done.returncode, json.loads(done.stdout)) == (0, {})
    # Not a benchmark: the helper gave up near its 250 ms deadline, not at some later timeout.
    assert elapsed < 2


@pytest.mark.parametrize(
    ("harness", "payload", "env"),
    [
        ("claude", b"{}", {}),
        ("claude", b"not json at all", {"ACTIVE_MEMORY_BROKER": "127.0.0.1:1"}),
        ("nobody", b"{}", {}),
        ("claude", b"x" * (300 * 1024), {}),
        ("claude", b"{}", {"ACTIVE_MEMORY_TICKET": "/nonexistent/ticket"}),
        ("claude", b"{}", {"ACTIVE_MEMORY_BROKER": "not-an-address", "ACTIVE_MEMORY_TOKEN": "t"}),
    ],
)
def test_helper_always_prints_a_valid_empty_answer(
    harness: str, payload: bytes, env: dict[str, str]
) -> None:
    done = run_helper(harness, payload, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")


def test_helper_with_a_wrong_token_prints_empty(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1") | {"ACTIVE_MEMORY_TOKEN": "forged"}
    done = run_helper("claude", fixture("claude/read.json"), env)
    assert json.loads(done.stdout) == {}
    assert run.deliveries == ()


def imported_modules(*args: str) -> set[str]:
    command = [sys.executable, "-X", "importtime", "-I", "-S", *args]
    done = subprocess.run(command, input=b"{}", capture_output=True, timeout=20, env=CLEAN_ENV)
    return {
        line.split("|")[-1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_helper_with_no_broker_to_ask_imports_nothing_beyond_the_bare_interpreter() -> None:
    bare = imported_modules("-c", "pass")
    extra = imported_modules(str(HELPER), "claude") - bare
    assert extra == set()


SHA256 = "_sha2" if sys.version_info >= (3, 12) else "_sha256"


def test_console_script_entry_point_behaves_the_same(run: ActiveRun) -> None:
    script = Path(sys.executable).with_name("active-memory-hook")
    env = run.hook_env("build", "conv-9")
    done = subprocess.run([str(script), "pi"], input=fixture("pi/read.json"),
                          env={**CLEAN_ENV, **env}, capture_output=True, timeout=20)  # fmt: skip
    assert done.returncode == 0
    assert lesson_id(2) in json.loads(done.stdout)["additionalContext"]


def test_main_in_process_prints_empty_without_a_broker(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [key for key in os.environ if key.startswith("ACTIVE_MEMORY_")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr("sys.stdin", open(os.devnull))  # noqa: SIM115
    assert helper.main(["claude"]) == 0
    assert capsysbinary.readouterr().out == b"{}\n"


# --- a broker that answers something a harness must not receive ---------------------------


class RogueBroker:
    """A listener on the broker's port that answers every helper frame with ``answer``.

    By default it knows the token (``t``) and signs its answer as the broker does: a broker gone
    wrong. With another ``key`` it is an impostor that bound the port; with ``replay`` it signs
    with the token but over another call's nonce (an answer recorded earlier).
    """

    def __init__(self, answer: bytes, *, key: bytes = b"t", replay: bool = False) -> None:
        self.answer = answer
        self.key, self.replay = key, replay
        self.requests: list[bytes] = []
        self.acks: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    @property
    def env(self) -> dict[str, str]:
        host, port = self.sock.getsockname()
        return {"ACTIVE_MEMORY_BROKER": f"{host}:{port}", "ACTIVE_MEMORY_TOKEN": "t"}

    def read(self, connection: socket.socket) -> bytes:
        header = connection.recv(4, socket.MSG_WAITALL)
        size = int.from_bytes(header, "big") if len(header) == 4 else 0
        return connection.recv(size, socket.MSG_WAITALL) if size else b""

    def serve(self) -> None:
        with contextlib.suppress(OSError):
            connection, _ = self.sock.accept()
            with connection:
                connection.settimeout(5)
                request = self.read(connection)
                self.requests.append(request)
                nonce = b"0" * 32 if self.replay else json.loads(request[32:])["nonce"].encode()
                tag = helper.hmac_sha256(self.key, helper.ANSWER_CONTEXT, nonce, self.answer)
                data = tag + self.answer
                connection.sendall(len(data).to_bytes(4, "big") + data)
                self.acks.append(self.read(connection))

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)


CONTEXT = "<active_memory>\nnote\n</active_memory>"
CLAUDE_OK = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                               "additionalContext": CONTEXT}}).encode()  # fmt: skip
FLAT_OK = json.dumps({"additionalContext": CONTEXT}).encode()
DENY = {"hookEventName": "PreToolUse", "additionalContext": "x", "permissionDecision": "deny"}
ROGUE_ANSWERS = [
    b'{"hookSpecificOutput": }',
    b'{"additionalContext": "x"',
    b'{} {"decision": "block"}',
    b'{"decision": "block", "reason": "stop"}',
    json.dumps({"hookSpecificOutput": DENY}).encode(),
    b'{"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}}',
    b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": 7}}',
    b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "x"},'
    b' "continue": false}',
    b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "x",'
    b' "additionalContext": "y"}}',
    b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": NaN}}',
    b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "\xff"}}',
    b"[]",
    FLAT_OK,
]


@pytest.mark.parametrize("answer", ROGUE_ANSWERS)
def test_helper_never_relays_what_a_claude_hook_must_not_answer(answer: bytes) -> None:
    rogue = RogueBroker(answer)
    try:
        done = run_helper("claude", fixture("claude/read.json"), rogue.env)
    finally:
        rogue.close()
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")
    assert rogue.acks in ([], [b""])  # never acknowledged: nothing was handed over


@pytest.mark.parametrize(
    ("harness", "answer"), [("claude", CLAUDE_OK), ("codex", CLAUDE_OK), ("copilot", FLAT_OK),
                            ("pi", FLAT_OK), ("pi", b" {} ")]
)  # fmt: skip
def test_helper_relays_a_well_formed_answer_as_sent(harness: str, answer: bytes) -> None:
    rogue = RogueBroker(answer)
    try:
        done = run_helper(harness, b"{}", rogue.env)
    finally:
        rogue.close()
    assert done.stdout == answer + b"\n"
    assert rogue.acks == [b'{"ack":true}']


@pytest.mark.parametrize("harness", sorted(HARNESS_NAMES))
def test_the_helper_accepts_every_answer_the_adapters_write(harness: str) -> None:
    adapter = harness_adapter(harness)
    assert adapter is not None
    for context in ("", CONTEXT, 'é \u2028 \\ " \x01'):
        assert helper.valid_answer(harness, encode(adapter.answer(context)))
    other = FLAT_OK if harness in ("claude", "codex") else CLAUDE_OK
    assert not helper.valid_answer(harness, other)


def test_without_the_c_scanner_the_json_module_validates_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "_json", None)
    assert helper.valid_answer("claude", CLAUDE_OK)
    assert helper.valid_answer("pi", b"{}")
    for answer in ROGUE_ANSWERS[:-1]:
        assert not helper.valid_answer("claude", answer)


def relayed_with_imports(answer: bytes) -> tuple[bytes, list[bytes], set[str]]:
    """What the helper printed for a broker answering ``answer``, the acknowledgements the
    broker got, and the modules the helper loaded beyond the bare interpreter's."""
    rogue = RogueBroker(answer)
    try:
        command = [sys.executable, "-X", "importtime", "-I", "-S", str(HELPER), "claude"]
        done = subprocess.run(command, input=b"{}", capture_output=True, timeout=20,
                              env={**CLEAN_ENV, **rogue.env})  # fmt: skip
    finally:
        rogue.close()
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()
                if line.startswith("import time:") and "|" in line}  # fmt: skip
    return done.stdout, rogue.acks, imported - imported_modules("-c", "pass")


def test_a_relayed_answer_costs_only_the_c_scanner_import() -> None:
    printed, _, extra = relayed_with_imports(CLAUDE_OK)
    assert printed == CLAUDE_OK + b"\n"
    assert extra == {"_socket", "_json", SHA256}


def test_an_empty_answer_is_relayed_without_loading_the_c_scanner() -> None:
    printed, acks, extra = relayed_with_imports(b"{}")
    assert printed == b"{}\n"
    assert acks == [b'{"ack":true}']  # relayed as the broker's own answer, acknowledged
    assert extra == {"_socket", SHA256}


def test_the_installed_command_ends_without_the_interpreter_s_teardown() -> None:
    # An exit handler stands for the teardown: run() leaves once the answer is flushed.
    launcher = (
        "import atexit, sys; atexit.register(print, 'teardown', file=sys.stderr); "
        f"sys.path.insert(0, {str(HELPER.parent)!r}); from helper import run; run()"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", launcher, "claude"], input=b"{}",
                          capture_output=True, timeout=20, env=CLEAN_ENV)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")
    kept = subprocess.run([sys.executable, "-I", "-S", "-c", launcher.replace("run()", "main()")
                           .replace("import run", "import main"), "claude"], input=b"{}",
                          capture_output=True, timeout=20, env=CLEAN_ENV)  # fmt: skip
    assert (kept.stdout, kept.stderr) == (b"{}\n", b"teardown\n")  # main() alone returns


def test_helper_answers_empty_where_there_is_no_posix_module(tmp_path: Path) -> None:
    # What Windows looks like to the helper: no posix module (nor anything that needs it).
    launcher = (
        "import sys; sys.modules['posix'] = None; "
        f"sys.path.insert(0, {str(HELPER.parent)!r}); from helper import main; sys.exit(main())"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", launcher, "claude"],
                          input=fixture("claude/read.json"), capture_output=True, timeout=20,
                          env={**CLEAN_ENV, "ACTIVE_MEMORY_BROKER": "127.0.0.1:1"})  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")


def test_without_posix_the_environment_is_read_through_os(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACTIVE_MEMORY_NODE", "build")
    monkeypatch.setitem(sys.modules, "posix", None)
    assert helper._env("ACTIVE_MEMORY_NODE") == "build"
    assert helper._env("ACTIVE_MEMORY_NOT_SET") is None


# --- a listener that is not the broker the token was issued for ----------------------------


@pytest.mark.parametrize(("key", "replay"), [(b"guess", False), (b"", False), (b"t", True)])
def test_helper_relays_nothing_from_a_listener_that_cannot_sign_this_call(
    key: bytes, replay: bool
) -> None:
    rogue = RogueBroker(CLAUDE_OK, key=key, replay=replay)
    try:
        env = rogue.env | {"ACTIVE_MEMORY_TOKEN": "a-token-the-listener-must-never-see"}
        if not replay:
            done = run_helper("claude", b"{}", env)
        else:
            done = run_helper("claude", b"{}", rogue.env)
    finally:
        rogue.close()
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")
    assert rogue.acks in ([], [b""])
    assert len(rogue.requests) == 1
    assert b"a-token-the-listener-must-never-see" not in rogue.requests[0]
    assert b"token" not in rogue.requests[0]


def test_helper_request_is_signed_with_the_token_over_its_exact_bytes() -> None:
    rogue = RogueBroker(FLAT_OK)
    try:
        done = run_helper("pi", b'{"tool": "read"}', rogue.env)
    finally:
        rogue.close()
    assert done.stdout == FLAT_OK + b"\n"
    tag, body = rogue.requests[0][:32], rogue.requests[0][32:]
    assert tag == hmac.new(b"t", helper.REQUEST_CONTEXT + body, hashlib.sha256).digest()
    assert json.loads(body)["payload"] == {"tool": "read"}


def test_hmac_matches_the_standard_library() -> None:
    for key in (b"", b"k", b"x" * 64, b"y" * 65, b"z" * 200):
        parts = (b"context\n", b"nonce", b"answer " * 100)
        expected = hmac.new(key, b"".join(parts), hashlib.sha256).digest()
        assert helper.hmac_sha256(key, *parts) == expected


def test_helper_signing_contexts_match_the_broker() -> None:
    assert helper.REQUEST_CONTEXT == wire.REQUEST_CONTEXT
    assert helper.ANSWER_CONTEXT == wire.ANSWER_CONTEXT
    assert helper.MAC_BYTES == wire.MAC_BYTES


# --- the whole call stays within its budget ---------------------------------------------------


def test_helper_gives_up_on_stdin_that_never_ends(run: ActiveRun) -> None:
    env = run.hook_env("build", "conv-1")
    command = [sys.executable, "-I", "-S", str(HELPER), "claude"]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**CLEAN_ENV, **env})  # fmt: skip
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        process.stdin.write(fixture("claude/read.json")[:20])  # part of a payload, and no EOF
        process.stdin.flush()
        # A helper blocked on stdin would wait for the EOF that never comes: the wait times out.
        code = process.wait(timeout=10)
        out = process.stdout.read()
    finally:
        process.stdin.close()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (code, out) == (0, b"{}\n")
    assert run.deliveries == ()


def test_helper_does_not_block_on_a_fifo_ticket(tmp_path: Path) -> None:
    fifo = tmp_path / "ticket"
    os.mkfifo(fifo, 0o600)
    started = time.monotonic()
    done = run_helper("claude", b"{}", {"ACTIVE_MEMORY_TICKET": str(fifo)})
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}\n", b"")
    # Not a benchmark: a blocking open would have hung until the 20 s subprocess timeout.
    assert time.monotonic() - started < 10


def test_helper_refuses_a_ticket_others_can_read(run: ActiveRun, tmp_path: Path) -> None:
    env = run.hook_env("build", "conv-1")
    ticket = Path(env["ACTIVE_MEMORY_TICKET"])
    assert json.loads(run_helper("claude", fixture("claude/read.json"), {},
                                 "--ticket", str(ticket)).stdout) != {}  # fmt: skip
    shared = tmp_path / "shared.ticket"
    shared.write_bytes(ticket.read_bytes())
    os.chmod(shared, 0o644)
    done = run_helper("claude", fixture("claude/read.json"), {}, "--ticket", str(shared))
    assert (done.returncode, done.stdout) == (0, b"{}\n")
