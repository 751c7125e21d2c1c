"""The pi harness lane: a specialist session as a fresh ``pi -p`` session.

The session's first message goes on stdin to a non-interactive pi session (``pi -p --mode
json``) started in the checkout (with no checkout, the evidence folder), with the source
node's model (``--model``: pi resolves it among the providers it has, or ``provider/id``) and
effort (``--thinking``; ``none`` is ``off``). pi's own login and settings serve it: we never
read or copy them. What the session may do is set by pi's own flags:

* ``--tools read,grep,find,ls`` is the whole tool set it has (no bash, edit or write; pi has
  no web or MCP tool of its own, only through extensions);
* ``--no-extensions`` loads no extension, and active-memory's own pi integration is one, so
  no recall reaches a specialist; ``--no-skills``, ``--no-prompt-templates`` and
  ``--no-context-files`` (AGENTS.md, CLAUDE.md) keep the rest of the user's set-up out;
* ``--system-prompt`` is the specialist's prompt (with a note on where the roots are). pi takes
  no answer schema: the host's contract check and repair turn carry the answer's shape;
* the session is marked: :data:`~active_memory.lanes.SPECIALIST_SESSION_VARIABLE` is set in its
  environment and its first message starts with
  :data:`~active_memory.lanes.SPECIALIST_SESSION_MARKER`; the variables of a recall hook
  (``ACTIVE_MEMORY_*``) are not passed on.

What pi cannot do: its read tools take any path, not the checkout's alone. The repair turn
resumes the same session (``--session ID``, the id of its ``session`` event). Usage is the sum
of its assistant messages'; the shared deadline and cancellation end the child's process group
(:mod:`.child`). A missing ``pi``, one older than ``CLI.min_version`` or one with no login for
the model's provider is :class:`~active_memory.errors.HarnessUnavailable`.
"""

from __future__ import annotations

from active_memory.agents.harness_lanes.harness_cli import (
    HarnessCli,
    harness_response,
    session_key,
    specialist_system,
    turn_prompt,
    workspace,
)
from active_memory.agents.harness_lanes.lane import HarnessLane
from active_memory.agents.harness_lanes.pi_events import READ_TOOL, read_pi_events
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.harnesses import harness_row

__all__ = ["CLI", "INVESTIGATION_TOOLS", "LANE", "RUNNER", "THINKING", "PiLane"]

HARNESS = harness_row("pi")
LANE = HARNESS.lane
# ``pi --help``: --thinking <level>: off, minimal, low, medium, high, xhigh; our ``none`` is off.
THINKING = ("off", "minimal", "low", "medium", "high", "xhigh")
# The release this lane was tested with (tests/conformance).
CLI = HarnessCli(
    lane=LANE,
    display="pi",
    command="pi",
    install="npm install -g @mariozechner/pi-coding-agent",
    update="npm install -g @mariozechner/pi-coding-agent",
    login_step="start `pi` and log in with its /login command (or set the provider's API key)",
    efforts=("none", *THINKING),
    min_version=(0, 73, 1),
    logged_out_signs=(
        "no api key",
        "not logged in",
        "/login",
        "401 unauthorized",
        "invalid api key",
    ),
)
INVESTIGATION_TOOLS = (READ_TOOL, "grep", "find", "ls")
OFF = ("--no-extensions", "--no-skills", "--no-prompt-templates", "--no-context-files")


class PiLane(HarnessLane):
    """A :class:`~.lane.HarnessLane` whose every turn is a ``pi -p`` run: the first turn of a
    session starts a pi session, a later turn (the repair) resumes it."""

    harness = HARNESS
    cli = CLI

    def argv(self, request: ModelRequest, *, session_id: str | None = None) -> list[str]:
        """The command line of one turn (tested as it is): a new session, or with
        ``session_id`` a resumed one."""
        argv = [self.executable, "-p", "--mode", "json", "--model", request.model]
        if request.effort is not None:
            thinking = "off" if request.effort == "none" else str(request.effort)
            argv += ["--thinking", thinking]
        argv += ["--tools", ",".join(INVESTIGATION_TOOLS), *OFF]
        system = specialist_system(request, inside="pi", tools="its read, grep, find and ls tools")
        argv += ["--system-prompt", system]
        return argv if session_id is None else [*argv, "--session", session_id]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        session_id, prompt = turn_prompt(request, self._sessions, LANE)
        cwd, _ = workspace(request, LANE)
        argv = self.argv(request, session_id=session_id)
        finished = await CLI.run(argv, request, prompt=prompt, cwd=cwd, env=self._env)
        transcript = read_pi_events(finished.stdout, request.folders, cwd)
        if transcript.session_id is not None:
            self._sessions[session_key(request)] = transcript.session_id
        CLI.refuse(transcript.ran_tools - set(INVESTIGATION_TOOLS), transcript.outside_reads)
        if transcript.failure is not None or not transcript.finished:
            raise CLI.failed(transcript.failure, finished.stderr, finished.returncode)
        return harness_response(
            transcript.answer,
            transcript.usage,
            model=transcript.model or request.model,
            tool_calls=transcript.tool_calls,
            read_paths=transcript.read_paths,
        )


RUNNER = PiLane
