"""The Claude Code harness lane: a specialist session as a fresh ``claude -p`` session.

The session's system prompt and first message go to a non-interactive Claude Code session
(``claude -p``, the first message on stdin) started in the checkout, with the source node's
model (``--model``) and effort (``--effort``; ``none`` turns thinking off). Claude Code's own
login and settings serve it: we never read or copy them. What the session may do is set by the
CLI's own flags:

* ``--tools Read,Grep,Glob`` is the whole tool set it is offered (no Bash, Edit, Write,
  WebFetch, WebSearch or Task), ``--disallowedTools`` the writing, shell and network tools by
  name, and ``--permission-mode dontAsk`` refuses whatever was not allowed instead of asking;
  ``--strict-mcp-config`` with an empty ``--mcp-config`` loads no MCP server;
* ``--allowedTools`` holds one permission rule per folder, ``Read(//abs/folder/**)`` (``//``
  anchors it at the filesystem root), for the checkout (the working directory) and the
  evidence folder (``--add-dir``); Claude Code applies Read rules to Grep and Glob too, so a
  read or search anywhere else matches no rule and dontAsk refuses it. As defence in depth the
  host fails the session (``read_outside_checkout``) when its stream shows a Read, Grep or
  Glob outside those folders that came back without an error. With no checkout, the evidence
  folder is the working directory;
* ``--settings '{"disableAllHooks": true}'`` keeps every hook, active-memory's own included,
  out of the session (no recall into a specialist), and ``--disable-slash-commands`` its skills;
* ``--json-schema`` is the answer contract, so the answer comes back as ``structured_output``;
  the host still validates it against the same contract (:class:`~.tool_loop.Session`);
* the session is marked: :data:`~active_memory.lanes.SPECIALIST_SESSION_VARIABLE` is set in its
  environment, its first message starts with :data:`~active_memory.lanes.SPECIALIST_SESSION_MARKER`
  and its name (``--name``) says what it is, so automatic learning never reviews it. The
  variables of a recall hook (``ACTIVE_MEMORY_*``) and of an enclosing Claude Code session are
  not passed on.

A session is one turn of the host's tool loop: Claude Code runs its own tools inside it. The
repair turn resumes the same Claude Code session (``--resume``) with the problems. Usage is the
result's ``usage``; the shared deadline and cancellation end the child's process group
(:mod:`.child`). A missing ``claude``, one older than ``CLI.min_version`` or one that is logged
out is :class:`~active_memory.errors.HarnessUnavailable`: one sentence naming the command that
fixes it, whose ``cause`` the report keeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from active_memory.agents.harness_lanes.claude_stream import READ_TOOL, Transcript, read_transcript
from active_memory.agents.harness_lanes.harness_cli import (
    HarnessCli,
    child_env as harness_env,
    named_turn,
    specialist_system,
    workspace,
)
from active_memory.agents.harness_lanes.lane import HarnessLane
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.session_limits import SessionLimits
from active_memory.errors import ProviderError
from active_memory.harnesses import harness_row
from active_memory.models.runs import Binding

__all__ = [
    "CLI",
    "EFFORTS",
    "LANE",
    "RUNNER",
    "ClaudeCodeLane",
    "child_env",
]

HARNESS = harness_row("claude")
LANE = HARNESS.lane
# ``claude --help``: --effort <level> (low, medium, high, xhigh, max).
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# The oldest release known to have every flag used here (--json-schema, --effort, --tools).
CLI = HarnessCli(
    lane=LANE,
    display="Claude Code",
    command="claude",
    install="npm install -g @anthropic-ai/claude-code",
    update="claude update",
    login_step="run `claude auth login`",
    efforts=("none", *EFFORTS),
    min_version=(2, 1, 0),
    logged_out_signs=("not logged in", "/login", "invalid api key", "oauth token has expired"),
)
INVESTIGATION_TOOLS = (READ_TOOL, "Grep", "Glob")
ANSWER_NOTE = "Give the final answer through the structured output, once."
DENIED_TOOLS = (
    "Bash",
    "BashOutput",
    "KillShell",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "WebSearch",
    "Task",
    "Agent",
)
NO_HOOKS = json.dumps({"disableAllHooks": True})
NO_MCP = json.dumps({"mcpServers": {}})
# What an enclosing Claude Code session sets (a worker started by its hook): not ours to pass.
_ENCLOSING_SESSION = frozenset({"CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"})


def child_env(env: Mapping[str, str], effort: str | None) -> dict[str, str]:
    """The harness's environment: the caller's, without a recall hook's variables or an
    enclosing Claude Code session's, with the specialist marker."""
    kept = harness_env(env, dropped=_ENCLOSING_SESSION)
    if effort == "none":
        kept["MAX_THINKING_TOKENS"] = "0"
    return kept


class ClaudeCodeLane(HarnessLane):
    """A :class:`~.lane.HarnessLane` whose every turn is a ``claude -p`` run: the first turn of
    a session starts a Claude Code session, a later turn (the repair) resumes it."""

    harness = HARNESS
    cli = CLI

    def __init__(
        self,
        binding: Binding,
        *,
        env: Mapping[str, str],
        max_turns: int = SessionLimits().max_turns,
    ) -> None:
        super().__init__(binding, env=env)
        self.max_turns = max_turns

    def environment(self, env: Mapping[str, str], effort: str | None) -> dict[str, str]:
        return child_env(env, effort)

    def argv(self, request: ModelRequest, session_id: str, *, resume: bool) -> list[str]:
        """The command line of one turn (tested as it is)."""
        _, other = workspace(request, LANE)
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--model", request.model]
        if request.effort not in (None, "none"):
            argv += ["--effort", str(request.effort)]
        system = specialist_system(
            request, inside="Claude Code", tools="its Read, Grep and Glob tools", answer=ANSWER_NOTE
        )
        argv += ["--system-prompt", system]
        argv += ["--json-schema", json.dumps(dict(request.contract.schema), sort_keys=True)]
        argv += ["--tools", ",".join(INVESTIGATION_TOOLS)]
        argv += ["--allowedTools", ",".join(read_rules(request))]
        argv += ["--disallowedTools", ",".join(DENIED_TOOLS), "--permission-mode", "dontAsk"]
        argv += ["--strict-mcp-config", "--mcp-config", NO_MCP, "--settings", NO_HOOKS]
        argv += ["--disable-slash-commands", "--max-turns", str(self.max_turns)]
        for folder in other:
            argv += ["--add-dir", folder]
        if resume:
            return [*argv, "--resume", session_id]
        labels = request.labels
        name = f"active-memory specialist {labels.specialist or 'session'} batch {labels.batch}"
        return [*argv, "--session-id", session_id, "--name", name]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        session_id, resume, prompt = named_turn(request, self._sessions, LANE)
        cwd, _ = workspace(request, LANE)
        argv = self.argv(request, session_id, resume=resume)
        finished = await CLI.run(argv, request, prompt=prompt, cwd=cwd, env=self._env)
        transcript = read_transcript(finished.stdout, request.folders, cwd)
        CLI.refuse(_extra_tools(transcript), transcript.outside_reads)
        if transcript.result is None:
            raise CLI.failed(None, finished.stderr, finished.returncode)
        return _response(transcript)


def read_rules(request: ModelRequest) -> list[str]:
    """The permission rules that allow reading the session's folders and nothing else: Claude
    Code applies Read rules to Grep and Glob too, and ``//`` anchors a rule at the root."""
    rules: list[str] = []
    for _, folder in request.folders:
        # The folder as the prompt names it and as it resolves (a symlinked /tmp): both.
        for form in dict.fromkeys((Path(folder).absolute(), Path(folder).resolve())):
            rule = f"{READ_TOOL}(/{form.as_posix().rstrip('/')}/**)"
            rules.append(rule)
    return rules


def _extra_tools(transcript: Transcript) -> set[str]:
    """The tools the session was offered beyond the read-only ones (a CLI that ignored
    --tools): its answer may rest on what it changed."""
    return set(transcript.offered_tools or ()) - {*INVESTIGATION_TOOLS, "StructuredOutput"}


def _response(transcript: Transcript) -> ModelResponse:
    result = transcript.result or {}
    text = result.get("result") if isinstance(result.get("result"), str) else ""
    assert isinstance(text, str)
    if result.get("is_error"):
        if CLI.said_logged_out(text):
            raise CLI.logged_out()
        if result.get("subtype") != "error_max_turns":
            raise ProviderError(
                f"the Claude Code session failed ({result.get('subtype')}): {text[:300]}",
                cause="harness_error",
            )
    answer = None if result.get("is_error") else transcript.answer
    return ModelResponse(
        text="" if answer is not None else text,
        answer=answer,
        usage=transcript.usage,
        stop_reason="end_turn" if answer is not None else "other",
        model=transcript.model,
        harness_tool_calls=transcript.tool_calls,
        read_paths=transcript.read_paths,
    )


RUNNER = ClaudeCodeLane
