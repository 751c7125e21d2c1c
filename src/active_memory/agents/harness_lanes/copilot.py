"""The Copilot CLI harness lane: a specialist session as a fresh non-interactive ``copilot``
session.

The session's first message goes on stdin to ``copilot`` (piped stdin is its non-interactive
prompt mode) started in the checkout (with no checkout, the evidence folder), with the source
node's model (``--model``) and effort (``--reasoning-effort``). Copilot's own login and
settings serve it: we never read or copy them. Copilot CLI takes no system prompt and no
answer schema, so the specialist's prompt and the contract's name lead the first message, and
the host's contract check and repair turn carry the answer's shape. What the session may do is
set by Copilot's own flags:

* ``--available-tools view,grep,glob`` is the whole tool set the model sees (no bash, edit,
  create, web fetch, task, skill or MCP tool); ``--deny-tool shell``, ``--deny-tool write`` and
  ``--deny-tool url`` refuse the shell, file writes and URL access even if a tool offered them;
  ``--disable-builtin-mcps`` stops the GitHub MCP servers, ``--no-custom-instructions`` the
  AGENTS.md files, ``--no-ask-user`` the question tool, ``--disallow-temp-dir`` the temporary
  folder; ``--add-dir`` gives the evidence folder;
* hooks: Copilot CLI has no flag or variable that turns its hooks off for one session
  (``disableAllHooks`` is a settings.json key only). A repository's hooks load in prompt mode
  only for a trusted folder or with ``COPILOT_ALLOW_ALL=true`` or
  ``GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true``, and those two are not passed on; user-level
  hooks (``~/.copilot/hooks``) and the hooks of a folder the user trusted still run, with
  :data:`~active_memory.lanes.SPECIALIST_SESSION_VARIABLE` in their environment;
* the session is marked: that variable is set in its environment and its first message starts
  with :data:`~active_memory.lanes.SPECIALIST_SESSION_MARKER`; the variables of a recall hook
  (``ACTIVE_MEMORY_*``) are not passed on.

The repair turn resumes the same session (``--resume ID``). Usage comes from
``--usage-output-file`` (a temporary file); the shared deadline and cancellation end the
child's process group (:mod:`.child`). A missing ``copilot``, one older than
``CLI.min_version`` or one that is logged out is
:class:`~active_memory.errors.HarnessUnavailable`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from active_memory.agents.harness_lanes.copilot_events import (
    READ_TOOL,
    read_copilot_events,
    read_usage_file,
)
from active_memory.agents.harness_lanes.harness_cli import (
    HarnessCli,
    child_env,
    harness_response,
    named_turn,
    specialist_system,
    workspace,
)
from active_memory.agents.harness_lanes.lane import HarnessLane
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.harnesses import harness_row

__all__ = ["CLI", "DENIED", "EFFORTS", "INVESTIGATION_TOOLS", "LANE", "RUNNER", "CopilotLane"]

HARNESS = harness_row("copilot")
LANE = HARNESS.lane
# ``copilot --help``: --reasoning-effort <level>.
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
# The release this lane was tested with (tests/conformance).
CLI = HarnessCli(
    lane=LANE,
    display="Copilot CLI",
    command="copilot",
    install="npm install -g @github/copilot",
    update="copilot update",
    login_step="run `copilot login`",
    efforts=EFFORTS,
    min_version=(1, 0, 102),
    logged_out_signs=("not logged in", "copilot login", "no authentication", "not authenticated"),
)
INVESTIGATION_TOOLS = (READ_TOOL, "grep", "glob")
# Permission patterns (``copilot help permissions``): every shell command, write and URL.
DENIED = ("shell", "write", "url")
# What would load the checkout's own hooks and approve every tool: not passed on.
_TRUSTING = frozenset({"COPILOT_ALLOW_ALL", "GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS"})


class CopilotLane(HarnessLane):
    """A :class:`~.lane.HarnessLane` whose every turn is a ``copilot`` run: the first turn of a
    session starts a Copilot session, a later turn (the repair) resumes it."""

    harness = HARNESS
    cli = CLI

    def environment(self, env: Mapping[str, str], effort: str | None) -> dict[str, str]:
        return child_env(env, dropped=_TRUSTING)

    def argv(
        self, request: ModelRequest, session_id: str, usage_file: Path, *, resume: bool
    ) -> list[str]:
        """The command line of one turn (tested as it is)."""
        _, other = workspace(request, LANE)
        argv = [self.executable, "--output-format", "json", "--model", request.model]
        if request.effort is not None:
            argv += ["--reasoning-effort", str(request.effort)]
        argv += ["--available-tools", ",".join(INVESTIGATION_TOOLS)]
        for pattern in DENIED:
            argv += ["--deny-tool", pattern]
        argv += ["--disable-builtin-mcps", "--no-custom-instructions", "--no-ask-user"]
        argv += ["--disallow-temp-dir", "--no-auto-update", "--no-color"]
        for folder in other:
            argv += ["--add-dir", folder]
        argv += ["--usage-output-file", str(usage_file)]
        return [*argv, "--resume" if resume else "--session-id", session_id]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        system = specialist_system(
            request, inside="GitHub Copilot CLI", tools="its view, grep and glob tools"
        )
        session_id, resume, prompt = named_turn(request, self._sessions, LANE, instructions=system)
        cwd, _ = workspace(request, LANE)
        with tempfile.TemporaryDirectory(prefix="am-copilot-") as scratch:
            usage_file = Path(scratch) / "usage.json"
            argv = self.argv(request, session_id, usage_file, resume=resume)
            finished = await CLI.run(argv, request, prompt=prompt, cwd=cwd, env=self._env)
            usage = read_usage_file(usage_file)
        transcript = read_copilot_events(finished.stdout, request.folders, cwd)
        CLI.refuse(transcript.ran_tools - set(INVESTIGATION_TOOLS), transcript.outside_reads)
        if transcript.exit_code != 0 or finished.returncode != 0:
            raise CLI.failed(transcript.failure, finished.stderr, finished.returncode)
        return harness_response(
            transcript.answer,
            usage,
            model=transcript.model or request.model,
            tool_calls=transcript.tool_calls,
            read_paths=transcript.read_paths,
        )


RUNNER = CopilotLane
