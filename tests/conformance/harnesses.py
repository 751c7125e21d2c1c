"""The four real harness CLIs: pinned npm packages, installed once into a cache, run headless.

Each package is installed with ``npm install --prefix <cache>/<name>@<version>`` (``--no-audit
--no-fund``, a bounded time) into ``$ACTIVE_MEMORY_CONFORMANCE_CACHE``, else
``$XDG_CACHE_HOME/active-memory-conformance``, else ``~/.cache/active-memory-conformance``. An
install is made in a temporary folder and renamed into place once its binary answers
``--version``, so a broken or half-finished install is never reused; a cached one answers
``--version`` again once a test run (once for all the workers of a ``pytest -n`` run).
Installing is the only step that reaches a network (the npm registry); when it fails, the
harness's tests skip with npm's own words.

Every run is headless and points at the stand-in on 127.0.0.1 only; HOME, the XDG folders and
each CLI's own config folder are temporary; telemetry, update checks and other start-up
traffic are switched off where the CLI has a switch:

* Claude Code: ``claude -p`` with ``ANTHROPIC_BASE_URL`` and a dummy ``ANTHROPIC_API_KEY``
  (Anthropic Messages, streamed); ``CLAUDE_CONFIG_DIR`` temporary;
* Codex: ``codex exec`` with a custom model provider (OpenAI Responses, streamed) in a
  temporary ``CODEX_HOME/config.toml`` that trusts the project, because Codex loads a project's
  ``.codex/hooks.json`` only for a trusted project; ``--dangerously-bypass-hook-trust`` stands
  in for reviewing the new hook in ``/hooks``, which only the interactive UI offers;
* Copilot CLI: ``copilot -p`` with its bring-your-own-key provider (``COPILOT_PROVIDER_*``,
  OpenAI Chat Completions) and ``COPILOT_OFFLINE=true``: no GitHub login, no GitHub traffic.
  ``COPILOT_ALLOW_ALL=true`` approves tools and trusts the folder, which loads its hooks;
* pi: ``pi -p`` with a custom provider in a temporary agent folder's ``models.json`` (OpenAI
  Chat Completions), ``PI_OFFLINE=1``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from conformance.stand_in import ToolCall, ToolChooser

__all__ = [
    "HARNESSES",
    "Harness",
    "Installed",
    "Invocation",
    "cache_root",
    "install",
]

INSTALL_TIMEOUT_S = 180
VERSION_TIMEOUT_S = 60
PROMPT = "Read src/widgets/storage/blob.py and tell me what it does."


@dataclass(frozen=True, slots=True)
class Invocation:
    """One headless run: the command line and the environment added to the base one."""

    argv: list[str]
    env: dict[str, str]


@dataclass(frozen=True, slots=True)
class Installed:
    binary: Path | None
    reason: str = ""  # why there is no binary: the skip reason
    version: str = ""  # the binary's own --version line


@dataclass(frozen=True, slots=True)
class Harness:
    name: str
    package: str
    version: str
    bin: str
    hook_tool: str  # the tool name the hook (and so the receipt) sees for the read

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    def chooser(self, project: Path, relative: str) -> ToolChooser:
        """The stand-in's one tool call: read ``relative`` with this harness's own tool."""
        absolute = str(project / relative)

        def claude(names: Sequence[str]) -> ToolCall | None:
            return ToolCall("Read", {"file_path": absolute}) if "Read" in names else None

        def codex(names: Sequence[str]) -> ToolCall | None:
            if "exec_command" in names:
                return ToolCall("exec_command", {"cmd": f"cat {relative}", "workdir": str(project)})
            if "shell" in names:
                return ToolCall(
                    "shell",
                    {"command": ["bash", "-lc", f"cat {relative}"], "workdir": str(project)},
                )
            return None

        def copilot(names: Sequence[str]) -> ToolCall | None:
            return ToolCall("view", {"path": absolute}) if "view" in names else None

        def pi(names: Sequence[str]) -> ToolCall | None:
            return ToolCall("read", {"path": relative}) if "read" in names else None

        return {"claude": claude, "codex": codex, "copilot": copilot, "pi": pi}[self.name]

    def invocation(self, binary: Path, project: Path, home: Path, url: str) -> Invocation:
        """Write this CLI's config under ``home`` and say how to run it against ``url``."""
        if not url.startswith("http://127.0.0.1:"):
            raise ValueError(f"the stand-in must be on loopback, not {url!r}")
        return {
            "claude": _claude,
            "codex": _codex,
            "copilot": _copilot,
            "pi": _pi,
        }[self.name](binary, project, home, url)


def _claude(binary: Path, project: Path, home: Path, url: str) -> Invocation:
    env = {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-conformance-stand-in",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    }
    argv = [
        str(binary),
        "-p",
        PROMPT,
        "--output-format",
        "json",
        "--allowedTools",
        "Read",
        "--no-session-persistence",
        "--model",
        "claude-sonnet-4-5",
    ]
    return Invocation(argv, env)


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string for these paths


def _codex(binary: Path, project: Path, home: Path, url: str) -> Invocation:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    config = f"""\
model = "stand-in"
model_provider = "stand_in"
check_for_update_on_startup = false

[model_providers.stand_in]
name = "Conformance stand-in"
base_url = {_toml_string(url + "/v1")}
wire_api = "responses"
env_key = "CONFORMANCE_STAND_IN_KEY"

[projects.{_toml_string(str(project))}]
trust_level = "trusted"

[features]
plugins = false
apps = false

[analytics]
enabled = false
"""
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    env = {
        "CODEX_HOME": str(codex_home),
        "CONFORMANCE_STAND_IN_KEY": "stand-in",
        "RUST_LOG": "error",
    }
    argv = [
        str(binary),
        "exec",
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "--dangerously-bypass-hook-trust",
        "--sandbox",
        "read-only",
        "--cd",
        str(project),
        PROMPT,
    ]
    return Invocation(argv, env)


def _copilot(binary: Path, project: Path, home: Path, url: str) -> Invocation:
    env = {
        "COPILOT_HOME": str(home / ".copilot"),
        # The CLI unpacks its JavaScript once per cache folder: keep it beside the install.
        "COPILOT_PKG_CACHE_HOME": str(binary.parents[2] / "copilot-cache"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_ALLOW_ALL": "true",
        "COPILOT_PROVIDER_BASE_URL": url + "/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "stand-in",
        "COPILOT_MODEL": "stand-in",
        "NO_COLOR": "1",
    }
    argv = [str(binary), "-p", PROMPT, "--no-auto-update", "--no-color"]
    return Invocation(argv, env)


def _pi(binary: Path, project: Path, home: Path, url: str) -> Invocation:
    agent = home / ".pi" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "stand-in": {
                "baseUrl": url + "/v1",
                "api": "openai-completions",
                "apiKey": "stand-in",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "stand-in", "contextWindow": 128000, "maxTokens": 4096}],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
    env = {"PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1"}
    argv = [
        str(binary),
        "-p",
        "--provider",
        "stand-in",
        "--model",
        "stand-in",
        "--no-session",
        "--offline",
        "--mode",
        "json",
        PROMPT,
    ]
    return Invocation(argv, env)


# Versions known to work with what `hooks install` writes (issue 11); pinned exactly.
HARNESSES: Mapping[str, Harness] = {
    harness.name: harness
    for harness in (
        Harness("claude", "@anthropic-ai/claude-code", "2.1.197", "claude", "Read"),
        Harness("codex", "@openai/codex", "0.171.0", "codex", "Bash"),
        Harness("copilot", "@github/copilot", "1.0.102", "copilot", "view"),
        Harness("pi", "@mariozechner/pi-coding-agent", "0.73.1", "pi", "read"),
    )
}


def cache_root() -> Path:
    configured = os.environ.get("ACTIVE_MEMORY_CONFORMANCE_CACHE")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "active-memory-conformance"


def _folder(harness: Harness) -> str:
    return harness.spec.replace("/", "+")


def _version(binary: Path, scratch: Path) -> str:
    """The binary's ``--version`` line, run with a scratch HOME; raises when it does not run."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(scratch),
        "XDG_CONFIG_HOME": str(scratch / ".config"),
        "XDG_CACHE_HOME": str(scratch / ".cache"),
        "COPILOT_PKG_CACHE_HOME": str(binary.parents[2] / "copilot-cache"),
        "COPILOT_AUTO_UPDATE": "false",
        "CODEX_HOME": str(scratch / ".codex"),
        "CLAUDE_CONFIG_DIR": str(scratch / ".claude"),
        "DISABLE_AUTOUPDATER": "1",
        "PI_OFFLINE": "1",
    }
    (scratch / ".codex").mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(binary), "--version"],
        env=env,
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=VERSION_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    lines = (done.stdout.strip() or done.stderr.strip()).splitlines()  # pi prints on stderr
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"`{binary.name} --version` exited {done.returncode}: "
            f"{(done.stderr or done.stdout).strip()[-400:]}"
        )
    return lines[0].strip()


_NPM_NOISE = ("syscall ", "errno ", "A complete log", "If you are behind a proxy")


def _npm_reason(said: str) -> str:
    """npm's own first words on a failure (its code and message), without the stack trace."""
    lines = []
    for line in said.splitlines():
        if line.startswith("npm error ") and not line.startswith("npm error  "):
            text = line[len("npm error ") :].strip()
            if any(char.isalnum() for char in text) and not text.startswith(_NPM_NOISE):
                lines.append(text)
    return "; ".join(lines[:3]) or said.strip()[-400:] or "no output"


_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def install(harness: Harness, root: Path | None = None) -> Installed:
    """The harness's binary from the cache, installing the pinned package first if needed.

    One install at a time per harness: across threads, and across processes (the test workers
    of ``pytest -n``), so a fresh machine downloads each package once, not once per worker."""
    root = root or cache_root()
    with _locks_guard:
        lock = _locks.setdefault(harness.name, threading.Lock())
    with lock, _process_lock(root, harness):
        return _install(harness, root)


@contextlib.contextmanager
def _process_lock(root: Path, harness: Harness) -> Iterator[None]:
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle = (root / f".{_folder(harness)}.lock").open("a")
    except OSError:
        yield  # no lock without the folder: _install reports that folder's error itself
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# Every worker of one `pytest -n` run has this run's id (pytest-xdist sets it). The first worker
# to check a cached binary's --version notes it for the others, so one run starts each binary's
# --version once, not once per worker (pi's start alone costs ~1.2 CPU-s and ~3 s under load).
_RUN_ID = "PYTEST_XDIST_TESTRUNUID"
_CHECKED = ".checked-in-run"


def _checked_in_this_run(target: Path) -> str:
    """The --version line a worker of this test run already checked, or ``""``."""
    run = os.environ.get(_RUN_ID, "")
    try:
        noted_run, _, version = (target / _CHECKED).read_text("utf-8").partition("\n")
    except OSError:
        return ""
    return version if run and noted_run == run else ""


def _note_checked(target: Path, version: str) -> None:
    run = os.environ.get(_RUN_ID, "")
    if run:
        with contextlib.suppress(OSError):  # the note only saves a start; none is no error
            (target / _CHECKED).write_text(f"{run}\n{version}", "utf-8")


def _install(harness: Harness, root: Path) -> Installed:
    target = root / _folder(harness)
    binary = target / "node_modules" / ".bin" / harness.bin
    with tempfile.TemporaryDirectory(prefix="am-conformance-version-") as scratch:
        if binary.exists():
            checked = _checked_in_this_run(target)
            if checked:
                return Installed(binary, version=checked)
            try:
                version = _version(binary, Path(scratch))
            except (OSError, RuntimeError, subprocess.SubprocessError):
                shutil.rmtree(target, ignore_errors=True)  # broken: install it again
            else:
                _note_checked(target, version)
                return Installed(binary, version=version)
        npm = shutil.which("npm")
        if npm is None:
            return Installed(None, f"npm is not installed, so {harness.spec} cannot be")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            return Installed(None, f"cannot create the cache folder {root}: {error}")
        staging = Path(tempfile.mkdtemp(prefix=f".{_folder(harness)}.", dir=root))
        try:
            command = [
                npm,
                "install",
                "--prefix",
                str(staging),
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--no-progress",
                "--loglevel=error",
                "--fetch-retries=1",
                "--fetch-timeout=60000",
                "--fetch-retry-mintimeout=2000",
                "--fetch-retry-maxtimeout=10000",
                "--prefer-offline",  # a tarball already in npm's own cache needs no registry
                harness.spec,
            ]
            try:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=INSTALL_TIMEOUT_S,
                    stdin=subprocess.DEVNULL,
                )
            except subprocess.TimeoutExpired:
                return Installed(
                    None,
                    f"`npm install {harness.spec}` did not finish within "
                    f"{INSTALL_TIMEOUT_S} s (is the npm registry reachable?)",
                )
            if done.returncode != 0:
                return Installed(
                    None,
                    f"`npm install {harness.spec}` failed (exit {done.returncode}): "
                    + _npm_reason(done.stderr or done.stdout),
                )
            staged = staging / "node_modules" / ".bin" / harness.bin
            try:
                version = _version(staged, Path(scratch))
            except (OSError, RuntimeError, subprocess.SubprocessError) as error:
                return Installed(None, f"{harness.spec} installed but does not run: {error}")
            try:
                staging.chmod(0o755)  # mkdtemp made it private
                staging.rename(target)
            except OSError:
                if not binary.exists():  # nobody else finished it either
                    raise
            # The binary's --version was checked in the staging folder; links inside the
            # package are relative, so the renamed folder runs the same.
            _note_checked(target, version)
            return Installed(binary, version=version)
        finally:
            with contextlib.suppress(OSError):
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
