"""What every harness lane shares: the CLI's checks, its environment, the session's folders.

:class:`HarnessCli` is one harness CLI as a lane needs it: the command, how to install, update
and log in, and the oldest version with every flag the lane uses. Its checks raise
:class:`~active_memory.errors.HarnessUnavailable`, one sentence naming the command that fixes
the problem, whose ``cause`` the report keeps. The helpers below turn a
:class:`~active_memory.agents.providers.base.ModelRequest` into what a harness run is given:
its working directory, its first message (marked as a specialist's) or the repair's problems,
and the key under which a lane remembers the harness session a repair resumes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.agents.harness_lanes.child import Finished, run_child
from active_memory.agents.providers.base import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolResult,
    UserMessage,
)
from active_memory.errors import ConfigError, HarnessUnavailable, ProviderError
from active_memory.lanes import SPECIALIST_SESSION_MARKER, SPECIALIST_SESSION_VARIABLE

__all__ = [
    "CHECKOUT_ROOT",
    "MAX_OUTPUT_BYTES",
    "HarnessCli",
    "UsageKeys",
    "child_env",
    "count",
    "first_prompt",
    "folders_shown",
    "harness_response",
    "json_events",
    "named_turn",
    "root_path",
    "session_key",
    "since_last_turn",
    "specialist_system",
    "turn_prompt",
    "workspace",
]

# The root the specialists name the checkout (agents/specialists.py): the working directory.
CHECKOUT_ROOT = "repository"
# A session's JSON output: every tool result it ran is echoed in it.
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class HarnessCli:
    """One harness CLI: ``display`` is how its users name it, ``update`` the command that
    updates it, ``login_step`` what logs it in ("run `claude auth login`") and ``efforts`` the
    efforts it takes. ``logged_out_signs`` and ``unknown_option_signs`` are what it says (lower
    case) when logged out or given an option it does not have."""

    lane: str
    display: str
    command: str
    install: str
    update: str
    login_step: str
    min_version: tuple[int, int, int]
    efforts: tuple[str, ...]
    logged_out_signs: tuple[str, ...]
    unknown_option_signs: tuple[str, ...] = ("unknown option", "unexpected argument")

    def ready(self, effort: str | None, env: Mapping[str, str]) -> str:
        """The CLI's path, once the binding's ``effort`` is one it takes (a ConfigError
        otherwise, before any run) and :meth:`check` found it."""
        if effort not in (None, *self.efforts):
            raise ConfigError(
                "binding.effort",
                f"{effort!r} is not a {self.display} effort; use one of "
                f"{', '.join(self.efforts)} or leave it unset for the model's default",
            )
        return self.check(env)

    def said_logged_out(self, text: str) -> bool:
        lowered = text.lower()
        return any(sign in lowered for sign in self.logged_out_signs)

    def failed(self, reason: str | None, stderr: bytes, returncode: int) -> ProviderError:
        """Why a run ended without an answer: ``reason`` (its own error event), else the last
        line of its ``stderr``; a missing option or login is :class:`HarnessUnavailable`."""
        said = stderr.decode("utf-8", "replace").strip()
        lines = [line for line in said.splitlines() if not line.startswith("WARNING:")]
        reason = reason or (lines[-1] if lines else "")
        if any(sign in f"{reason}\n{said}".lower() for sign in self.unknown_option_signs):
            return self.too_old(reason[:200])
        if self.said_logged_out(f"{reason}\n{said}"):
            return self.logged_out()
        shown = reason[:300] if reason else "nothing on stderr"
        return ProviderError(
            f"`{self.command}` exited {returncode} without a result: {shown}",
            cause="harness_failed",
        )

    def not_read_only(self, tools: Iterable[str]) -> ProviderError:
        """A session that was offered or ran ``tools`` beyond reading: its answer may rest on
        what it changed, so it is not used."""
        return ProviderError(
            f"{self.display} gave the specialist more than read-only tools "
            f"({', '.join(sorted(tools))}); its answer was not used: update it with "
            f"`{self.update}`",
            cause="harness_tools_not_restricted",
        )

    def read_outside(self, paths: Iterable[str]) -> ProviderError:
        """A session whose tools read outside the checkout and the evidence folder: what it
        read may have reached its answer, so the answer is not used."""
        shown = ", ".join(repr(path) for path in sorted(set(paths))[:5])
        return ProviderError(
            f"{self.display} read outside the checkout and the evidence folder ({shown}); "
            "the specialist's answer was not used: a specialist reads those folders only",
            cause="read_outside_checkout",
        )

    def refuse(self, extra_tools: Collection[str], outside_reads: Collection[str]) -> None:
        """Raise :meth:`not_read_only` when the session was offered or ran ``extra_tools``,
        else :meth:`read_outside` when it read ``outside_reads``: either may have reached its
        answer."""
        if extra_tools:
            raise self.not_read_only(extra_tools)
        if outside_reads:
            raise self.read_outside(outside_reads)

    def missing(self) -> HarnessUnavailable:
        return HarnessUnavailable(
            f"the {self.lane} lane runs specialists with {self.display}'s `{self.command}` "
            f"command, which is not on PATH: install it with `{self.install}` (or choose an API "
            "lane with --lane)",
            cause="harness_missing",
        )

    def too_old(self, found: str) -> HarnessUnavailable:
        wanted = ".".join(str(part) for part in self.min_version)
        fix = f"`{self.update}`"
        if self.update != self.install:
            fix += f" (or `{self.install}`)"
        return HarnessUnavailable(
            f"the {self.lane} lane needs {self.display} {wanted} or newer and `{self.command} "
            f"--version` says {found!r}: update it with {fix}",
            cause="harness_too_old",
        )

    def logged_out(self) -> HarnessUnavailable:
        return HarnessUnavailable(
            f"{self.display} is not logged in, so the {self.lane} lane cannot run: "
            f"{self.login_step} and try again",
            cause="harness_logged_out",
        )

    async def run(
        self,
        argv: Sequence[str],
        request: ModelRequest,
        *,
        prompt: str,
        cwd: Path,
        env: Mapping[str, str],
    ) -> Finished:
        """One turn's run of the CLI: ``prompt`` on stdin, under the request's deadline, its
        output bounded by :data:`MAX_OUTPUT_BYTES`."""
        return await run_child(
            argv,
            stdin=prompt.encode("utf-8"),
            cwd=cwd,
            env=env,
            deadline=request.deadline,
            max_output=MAX_OUTPUT_BYTES,
            what=f"the {self.display} session of {request.labels.describe()}",
        )

    def check(self, env: Mapping[str, str]) -> str:
        """The path of the command on ``env``'s PATH, new enough; HarnessUnavailable else."""
        found = shutil.which(self.command, path=env.get("PATH", os.defpath))
        if found is None:
            raise self.missing()
        try:
            done = subprocess.run(
                [found, "--version"],
                capture_output=True,
                env=dict(env),
                timeout=30,
                check=False,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise HarnessUnavailable(
                f"`{found} --version` did not run ({error}): reinstall {self.display} with "
                f"`{self.install}`",
                cause="harness_missing",
            ) from error
        # pi prints its version on stderr.
        said = (done.stdout or done.stderr).decode("utf-8", "replace").strip().splitlines()
        shown = said[0] if said else ""
        match = _VERSION.search(shown)
        if match is None:
            raise self.too_old(shown or f"exit {done.returncode}")
        if tuple(int(part) for part in match.groups()) < self.min_version:
            raise self.too_old(shown)
        return found


def child_env(env: Mapping[str, str], *, dropped: Iterable[str] = ()) -> dict[str, str]:
    """The harness's environment: the caller's, without a recall hook's variables
    (``ACTIVE_MEMORY_*``) or the ``dropped`` ones, with the specialist marker."""
    drop = frozenset(dropped)
    kept = {
        name: value
        for name, value in env.items()
        if not name.startswith("ACTIVE_MEMORY_") and name not in drop
    }
    kept[SPECIALIST_SESSION_VARIABLE] = "1"
    return kept


def workspace(request: ModelRequest, lane: str) -> tuple[Path, tuple[str, ...]]:
    """The working directory (the checkout, else the evidence folder) and the other folders."""
    folders = dict(request.folders)
    if not folders:
        raise ConfigError("request.folders", f"the {lane} lane needs the session's folders")
    first = folders.get(CHECKOUT_ROOT) or next(iter(folders.values()))
    return Path(first), tuple(path for path in folders.values() if path != first)


def folders_shown(request: ModelRequest) -> str:
    """The roots a prompt's ``root:relative/path`` names, one line each."""
    return "\n".join(f"- `{root}`: the folder {path}" for root, path in request.folders)


def specialist_system(
    request: ModelRequest, *, inside: str, tools: str, answer: str | None = None
) -> str:
    """The specialist's system prompt with a note on the harness's tools (``tools``, which
    stand for the tools the prompt names), the roots of ``root:relative/path`` and how to give
    the answer (by default as the last message, JSON that satisfies the contract)."""
    answer = answer or (
        "Give the final answer as your last message: one JSON document that satisfies the "
        f"{request.contract.name} contract, and nothing else."
    )
    return (
        f"{request.system}\n\n## Your tools in this session\n"
        f"You run inside {inside}. Investigate with {tools} only; the tools the prompt names by "
        "other names are these. A file the prompt writes as `root:relative/path` is that path "
        f"inside the root's folder:\n{folders_shown(request)}\n"
        f"Cite a checkout file as `{CHECKOUT_ROOT}:<its path relative to that folder>`, never "
        f"as an absolute path. {answer}"
    )


def harness_response(
    answer: str | None,
    usage: TokenUsage,
    *,
    model: str,
    tool_calls: int,
    read_paths: frozenset[str],
) -> ModelResponse:
    """One harness run as a model turn: the answer (None: no answer, the repair turn asks for
    one), the tools the harness ran inside it and the files they showed."""
    return ModelResponse(
        text="",
        answer=answer,
        usage=usage,
        stop_reason="end_turn" if answer is not None else "other",
        model=model,
        harness_tool_calls=tool_calls,
        read_paths=read_paths,
    )


def session_key(request: ModelRequest) -> str:
    """Which specialist session a request belongs to: its first turn and its repair share it."""
    first = request.messages[0]
    text = first.text if isinstance(first, UserMessage) else ""
    labels = request.labels
    material = "\0".join((labels.specialist, str(labels.batch), request.system, text))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def first_prompt(request: ModelRequest, *, instructions: str = "") -> str:
    """The session's first message, marked so that automatic learning never reviews it; a
    harness with no way to take a system prompt gets ``instructions`` before the message."""
    first = request.messages[0]
    assert isinstance(first, UserMessage)
    before = f"{instructions}\n\n---\n\n" if instructions else ""
    return f"{SPECIALIST_SESSION_MARKER}\n\n{before}{first.text}"


def turn_prompt(
    request: ModelRequest, sessions: Mapping[str, str], lane: str, *, instructions: str = ""
) -> tuple[str | None, str]:
    """The harness session a turn resumes (None: a first turn, which starts one) and the
    message it sends: the marked first message, or the repair's problems."""
    if len(request.messages) == 1:
        return None, first_prompt(request, instructions=instructions)
    resumed = sessions.get(session_key(request))
    if resumed is None:
        raise ProviderError(
            f"the {lane} lane has no harness session to resume for {request.labels.describe()}",
            cause="harness_error",
        )
    return resumed, since_last_turn(request)


def named_turn(
    request: ModelRequest,
    sessions: MutableMapping[str, str],
    lane: str,
    *,
    instructions: str = "",
) -> tuple[str, bool, str]:
    """For a harness that takes the session id it is given: the id (a new one for a first
    turn, remembered in ``sessions`` for the repair), whether the turn resumes it, and the
    message it sends (see :func:`turn_prompt`)."""
    resumed, prompt = turn_prompt(request, sessions, lane, instructions=instructions)
    if resumed is not None:
        return resumed, True, prompt
    session_id = sessions[session_key(request)] = str(uuid.uuid4())
    return session_id, False, prompt


def since_last_turn(request: ModelRequest) -> str:
    """What the host said after the model's last turn (the repair's problems)."""
    said: list[str] = []
    for message in reversed(request.messages):
        if isinstance(message, AssistantMessage):
            break
        said.append(message.text if isinstance(message, UserMessage) else message.content)
        assert isinstance(message, UserMessage | ToolResult)
    return "\n\n".join(reversed(said))


def root_path(path: str, folders: Iterable[tuple[str, str]]) -> str | None:
    """``root:relative`` for an absolute ``path`` inside one of ``folders``, else None."""
    try:
        resolved = Path(path).resolve()
    except (OSError, ValueError):
        return None
    for root, folder in folders:
        base = Path(folder)
        if resolved.is_relative_to(base) and resolved != base:
            return f"{root}:{resolved.relative_to(base).as_posix()}"
    return None


def json_events(stdout: bytes) -> Iterator[Mapping[str, Any]]:
    """The JSON objects of a harness's JSON-lines output; a line that is not one (a warning
    some versions print) is skipped."""
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def count(usage: Mapping[str, Any], key: str) -> int:
    """A token count of a harness's usage record; 0 when it is missing or not a count."""
    value = usage.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


@dataclass(frozen=True, slots=True)
class UsageKeys:
    """How a harness names the token counts of its usage records. ``input`` names the counts
    whose sum is every prompt token, as :class:`~active_memory.agents.providers.base.TokenUsage`
    counts them: one count, or with it the cache's reads and writes for a harness that counts
    those apart (the Messages API's way)."""

    input: tuple[str, ...]
    output: str
    cache_read: str
    cache_write: str

    def tokens(self, usage: Mapping[str, Any]) -> TokenUsage:
        """One usage record's counts; a missing count, or one that is not a count, is 0."""
        return TokenUsage(
            input_tokens=sum(count(usage, key) for key in self.input),
            output_tokens=count(usage, self.output),
            cache_read_tokens=count(usage, self.cache_read),
            cache_write_tokens=count(usage, self.cache_write),
        )
