"""The Codex harness lane: a specialist session as a fresh ``codex exec`` session.

The session's first message goes on stdin to a non-interactive Codex session (``codex exec
-``) started in the checkout (``-C``; with no checkout, the evidence folder), with the source
node's model (``-m``) and effort (``-c model_reasoning_effort=…``). Codex's own login and
``config.toml`` serve it: we never read or copy them; only the settings below are overridden
for this one session, with Codex's own ``-c``/``--disable`` flags:

* Codex has no read-only file tools: it investigates with shell commands, which
  ``sandbox_mode="read-only"`` runs in its sandbox (a write fails with "Read-only file system",
  and the sandbox has no network), with ``approval_policy="never"`` (a command that asks to
  leave the sandbox is refused, never run) and ``--ignore-rules`` (no execpolicy rule lets one
  out). ``web_search="disabled"`` and ``mcp_servers={}`` take the web and MCP tools away;
  ``--disable`` turns off subagents, goals, apps, plugins, the browser, computer use and image
  generation;
* ``--disable hooks`` keeps every hook, active-memory's own included, out of the session;
* ``--output-schema FILE`` is the answer contract (a temporary file); the host still validates
  the last message against the same contract (:class:`~.tool_loop.Session`). The specialist's
  prompt goes in as ``-c developer_instructions=…``, beside Codex's own instructions;
* the session is marked: :data:`~active_memory.lanes.SPECIALIST_SESSION_VARIABLE` is set in its
  environment and its first message starts with
  :data:`~active_memory.lanes.SPECIALIST_SESSION_MARKER`; the variables of a recall hook
  (``ACTIVE_MEMORY_*``) are not passed on.

What Codex cannot do: its sandbox lets commands read the whole disk, not the checkout alone,
and a refused command does not appear in its ``--json`` events. So the host fails a session
(``read_outside_checkout``) whose command lines name a path outside the folders
(:func:`~.read_roots.command_outside`); a command run in a working directory the model chose
elsewhere, which the events do not show, is beyond that check. The repair turn resumes the
same Codex session (``codex exec resume THREAD -``). Usage is the ``turn.completed`` event's;
the shared deadline and cancellation end the child's process group (:mod:`.child`). A missing
``codex``, one older than ``CLI.min_version`` or one that is logged out is
:class:`~active_memory.errors.HarnessUnavailable`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from active_memory.agents.harness_lanes.codex_events import read_codex_events
from active_memory.agents.harness_lanes.harness_cli import (
    HarnessCli,
    harness_response,
    session_key,
    specialist_system,
    turn_prompt,
    workspace,
)
from active_memory.agents.harness_lanes.lane import HarnessLane
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.harnesses import harness_row

__all__ = ["CLI", "DISABLED_FEATURES", "EFFORTS", "LANE", "RUNNER", "CodexLane"]

HARNESS = harness_row("codex")
LANE = HARNESS.lane
# ``model_reasoning_effort`` in Codex's config reference.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
# The release this lane was tested with (tests/conformance): --output-schema, --ignore-rules,
# `--disable hooks` and `exec resume` with the same options are all recent.
CLI = HarnessCli(
    lane=LANE,
    display="Codex",
    command="codex",
    install="npm install -g @openai/codex",
    update="npm install -g @openai/codex",
    login_step="run `codex login`",
    efforts=EFFORTS,
    min_version=(0, 171, 0),
    logged_out_signs=("not logged in", "codex login", "401 unauthorized", "missing bearer"),
    unknown_option_signs=("unexpected argument", "unrecognized subcommand"),
)
# Features (``codex features list``) whose tools do more than read: off in the session.
DISABLED_FEATURES = (
    "hooks",
    "multi_agent",
    "goals",
    "apps",
    "plugins",
    "browser_use",
    "computer_use",
    "image_generation",
)
OVERRIDES = (
    'sandbox_mode="read-only"',
    'approval_policy="never"',
    'web_search="disabled"',
    "mcp_servers={}",
)
INSIDE = "Codex, in a read-only sandbox (writing files, the network and leaving it are refused)"
TOOLS = "read-only shell commands (`cat`, `sed -n`, `rg`, `ls`, `find`)"


def _toml(text: str) -> str:
    """``text`` as a TOML basic string (a JSON string's escapes are TOML's)."""
    return json.dumps(text)


class CodexLane(HarnessLane):
    """A :class:`~.lane.HarnessLane` whose every turn is a ``codex exec`` run: the first turn
    of a session starts a Codex session (a thread), a later turn (the repair) resumes it."""

    harness = HARNESS
    cli = CLI

    def argv(
        self, request: ModelRequest, schema: Path, *, thread_id: str | None = None
    ) -> list[str]:
        """The command line of one turn (tested as it is): a new session, or with
        ``thread_id`` a resumed one."""
        options = ["--json", "--skip-git-repo-check", "--ignore-rules"]
        options += ["--output-schema", str(schema), "-m", request.model]
        if request.effort is not None:
            options += ["-c", f"model_reasoning_effort={_toml(str(request.effort))}"]
        for override in OVERRIDES:
            options += ["-c", override]
        for feature in DISABLED_FEATURES:
            options += ["--disable", feature]
        system = specialist_system(request, inside=INSIDE, tools=TOOLS)
        options += ["-c", f"developer_instructions={_toml(system)}"]
        if thread_id is not None:
            return [self.executable, "exec", "resume", *options, thread_id, "-"]
        cwd, _ = workspace(request, LANE)
        return [self.executable, "exec", *options, "-C", str(cwd), "-"]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        thread_id, prompt = turn_prompt(request, self._sessions, LANE)
        cwd, _ = workspace(request, LANE)
        with tempfile.TemporaryDirectory(prefix="am-codex-") as scratch:
            schema = Path(scratch) / "answer.schema.json"
            schema.write_text(json.dumps(dict(request.contract.schema)), encoding="utf-8")
            argv = self.argv(request, schema, thread_id=thread_id)
            finished = await CLI.run(argv, request, prompt=prompt, cwd=cwd, env=self._env)
        transcript = read_codex_events(finished.stdout, request.folders, cwd)
        if transcript.thread_id is not None:
            self._sessions[session_key(request)] = transcript.thread_id
        CLI.refuse(set(transcript.forbidden), transcript.outside_reads)
        if not transcript.completed:
            raise CLI.failed(transcript.failure, finished.stderr, finished.returncode)
        return harness_response(
            transcript.answer,
            transcript.usage,
            model=request.model,
            tool_calls=transcript.tool_calls,
            read_paths=transcript.read_paths,
        )


RUNNER = CodexLane
