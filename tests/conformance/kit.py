"""What the conformance tests share: the checkout with a lesson, the CLI runner, the evidence.

The checkout is a temporary git repository (``origin`` names github.com/acme/widgets, so its
repository key is ``forge:github.com/acme/widgets``; nothing is fetched) with one source file.
Its lesson is written as an export line and imported with ``active-memory lessons import`` in
this process (set-up every test repeats; a process of its own cost ~0.5 s of CPU each time and
proved nothing the CLI tests do not). Hooks are installed with ``active-memory hooks install``
in this process too, or in a process of another interpreter or copy of the sources where a
test gives one (what it writes names the interpreter that ran it and its package's helper).

Each CLI runs with a clean environment (``base_env``: a temporary HOME, XDG folders and TMPDIR,
nothing of the real user's config, keys or proxies) plus what its ``Invocation`` adds. Where
``strace`` is installed, the run is traced and every IPv4/IPv6 ``connect`` of the process tree
must be to loopback (``ACTIVE_MEMORY_CONFORMANCE_STRACE=0`` turns the trace off).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import site
import subprocess
import sys
import time
import venv
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import active_memory
from active_memory.models.ids import new_lesson_id
from active_memory.models.lessons import Evidence, Lesson, RepositoryScope
from active_memory.store.sqlite import SqliteStore
from active_memory.store.transfer import lesson_line
from cli_runner import run_cli
from conformance.harnesses import Harness, Invocation
from conformance.stand_in import StandIn

REPOSITORY = "forge:github.com/acme/widgets"
TARGET = "src/widgets/storage/blob.py"
CONTENT_MARKER = "BLOB_WRITER_CONTENT_3f9c"
SOURCE = f'''class BlobWriter:
    """Buffers writes until flush() or close()."""

    def flush(self) -> None:
        pass  # {CONTENT_MARKER}
'''
TITLE = "Storage writes are batched"
RECOMMENDATION = (
    "Flush the BlobWriter before asserting on stored objects; writes are buffered until "
    "flush() or close()."
)
RUN_TIMEOUT_S = 120
SOURCES = str(Path(active_memory.__file__).resolve().parents[1])


@dataclass(frozen=True, slots=True)
class Workspace:
    root: Path
    project: Path
    store: Path
    home: Path
    lesson: Lesson

    @property
    def card_lines(self) -> tuple[str, str]:
        """The card's header and recommendation, as every frame renders them."""
        return f"[{self.lesson.key}] {TITLE}", f"  {RECOMMENDATION}"


def record(name: str, evidence: Mapping[str, Any]) -> None:
    """With ``ACTIVE_MEMORY_CONFORMANCE_RECORD=DIR``, keep what the model received as JSON."""
    folder = os.environ.get("ACTIVE_MEMORY_CONFORMANCE_RECORD")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        text = json.dumps(evidence, indent=2, ensure_ascii=False) + "\n"
        (Path(folder) / f"{name}.json").write_text(text, encoding="utf-8")


def cli(
    *args: str, python: str = sys.executable, sources: str = SOURCES
) -> subprocess.CompletedProcess[str]:
    """``active-memory ARGS`` from this checkout's sources, as a user would run it."""
    env = {**os.environ, "PYTHONPATH": sources}
    done = subprocess.run(
        [python, "-m", "active_memory.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"active-memory {' '.join(args)}: {done.stderr}"
    return done


def make_launcher(folder: Path) -> Path:
    """The interpreter of a real virtual environment in ``folder`` that has this interpreter's
    third-party packages but not active-memory, which it finds only on ``PYTHONPATH``.

    Given a copy of the package there, deleting the copy or ``folder`` breaks the launcher as
    deleting or rebuilding a user's virtual environment does. The third-party
    packages are reached through links to each entry of this interpreter's site-packages except
    active-memory's own, so an installed (not editable) active-memory is not found instead.
    """
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python3"
    found = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    packages = folder / "third-party"
    packages.mkdir()
    folders = {Path(path) for path in (*site.getsitepackages(), site.getusersitepackages())}
    for found_in in sorted(path for path in folders if path.is_dir()):
        for entry in found_in.iterdir():
            if entry.name.startswith(("active_memory", "_active_memory", "__editable__")):
                continue
            with contextlib.suppress(FileExistsError):
                (packages / entry.name).symlink_to(entry)
    (Path(found.stdout.strip()) / "third-party.pth").write_text(f"{packages}\n", "utf-8")
    # Without this process's PYTHONPATH (a test run's own sources may be on it), as a hook runs.
    # The third-party packages are found, not imported (importing them cost ~0.1 CPU-s): the
    # `hooks install` each test then runs with this interpreter imports them.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    check = ("import importlib.util as u\n"
             "assert all(u.find_spec(name) for name in ('git', 'pydantic')), 'not found'\n"
             "import active_memory")  # fmt: skip
    alone = subprocess.run(
        [str(python), "-c", check],
        capture_output=True, text=True, check=False, timeout=30, env=env,
    )  # fmt: skip
    assert "No module named 'active_memory'" in alone.stderr, alone.stderr
    return python


def _git(project: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-C",
            str(project),
            "-c",
            "user.name=Conformance",
            "-c",
            "user.email=conformance@example.invalid",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        check=True,
        capture_output=True,
        timeout=30,
    )


def make_workspace(tmp_path: Path) -> Workspace:
    """A git checkout with the file, and a store holding its lesson (imported by the CLI)."""
    project = tmp_path / "widgets"
    (project / TARGET).parent.mkdir(parents=True)
    (project / TARGET).write_text(SOURCE, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(project)], check=True, capture_output=True)
    _git(project, "remote", "add", "origin", "https://github.com/acme/widgets.git")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "widgets")
    lesson = Lesson(
        id=new_lesson_id(),
        revision=1,
        scope=RepositoryScope(repository=REPOSITORY, files=(TARGET,)),
        title=TITLE,
        recommendation=RECOMMENDATION,
        evidence=Evidence(
            run_id="run-earlier", references=("exec:e1",), reason="seen in an earlier run"
        ),
    )
    export = tmp_path / "lessons.jsonl"
    export.write_text(lesson_line(lesson) + "\n", encoding="utf-8")
    store = tmp_path / "state" / "lessons.sqlite3"
    imported = run_cli(["lessons", "import", export, "--store", store])
    assert imported.exit_code == 0, imported.output
    with SqliteStore(store, read_only=True) as opened:
        assert opened.get(lesson.id) == lesson
    home = tmp_path / "home"
    home.mkdir()
    return Workspace(tmp_path, project, store, home, lesson)


def install_hooks(
    harness: Harness, workspace: Workspace, *, python: str = sys.executable, sources: str = SOURCES
) -> dict[str, Any]:
    """``active-memory hooks install --harness NAME --project DIR --store PATH --json``.

    With another interpreter or another copy of the sources, in a process of that interpreter
    (what it writes names them); with this process's own, in this process, where it writes the
    same hooks (this interpreter and this package's helper) without ~0.5 s of CPU a start."""
    args = ("hooks", "install", "--harness", harness.name, "--project", str(workspace.project),
            "--store", str(workspace.store), "--json")  # fmt: skip
    if python == sys.executable and sources == SOURCES:
        result = run_cli(args)
        assert result.exit_code == 0, f"active-memory {' '.join(args)}: {result.output}"
        output = result.stdout
    else:
        output = cli(*args, python=python, sources=sources).stdout
    report: dict[str, Any] = json.loads(output)
    return report


# --- running a CLI ----------------------------------------------------------------------------

_STRACE = shutil.which("strace")
_CONNECT = re.compile(r"connect\(\d+, \{sa_family=AF_INET6?, (?P<address>[^}]*)\}")
_LOOPBACK = re.compile(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|"::ffff:127\.')


@functools.cache
def _trace_options() -> tuple[str, ...] | None:
    """strace's options for a run, or None when runs are not traced (strace missing, failing
    here, or turned off). With seccomp-bpf only ``connect`` stops the traced process; without
    it every system call of every thread does, which made a harness run several times slower."""
    if _STRACE is None or os.environ.get("ACTIVE_MEMORY_CONFORMANCE_STRACE") == "0":
        return None
    for options in (("--seccomp-bpf",), ()):
        command = [_STRACE, *options, "-f", "-qq", "-e", "trace=connect", "-o", os.devnull]
        probe = subprocess.run([*command, "true"], capture_output=True, timeout=30, check=False)
        if probe.returncode == 0:
            return (*options, "-f", "-qq", "-e", "trace=connect")
    return None


def tracing() -> bool:
    """Whether runs are traced: strace is installed, works here, and is not turned off."""
    return _trace_options() is not None


def trace_prefix(trace: Path) -> list[str]:
    """The command that runs a program traced into ``trace`` (appending); only when tracing."""
    options = _trace_options()
    assert _STRACE is not None
    assert options is not None
    return [_STRACE, *options, "-A", "-o", str(trace)]


def foreign_connects(trace: str) -> list[str]:
    """Every IPv4/IPv6 ``connect`` in an strace log whose address is not loopback."""
    return [
        match.group("address")
        for match in _CONNECT.finditer(trace)
        if not _LOOPBACK.search(match.group("address"))
    ]


@dataclass(frozen=True, slots=True)
class Ran:
    process: subprocess.CompletedProcess[str]
    foreign: list[str] | None  # non-loopback connects, when traced
    seconds: float

    @property
    def output(self) -> str:
        process = self.process
        return (
            f"exit {process.returncode} after {self.seconds:.1f} s\n"
            f"stdout:\n{process.stdout[-4000:]}\nstderr:\n{process.stderr[-4000:]}"
        )


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: nothing of the real user's config, keys or proxies leaks in."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"),
        "NO_UPDATE_NOTIFIER": "1",
        "DO_NOT_TRACK": "1",
    }


def run_harness(
    harness: Harness,
    binary: Path,
    workspace: Workspace,
    model: StandIn,
    extra_env: Mapping[str, str] | None = None,
    *,
    name: str = "run",
) -> Ran:
    """Run the CLI headless in the project against ``model``; its HOME is a fresh folder."""
    home = workspace.home / name
    (home / "tmp").mkdir(parents=True)
    invocation: Invocation = harness.invocation(binary, workspace.project, home, model.url)
    env = {**base_env(home), **invocation.env, **(extra_env or {})}
    argv = invocation.argv
    trace = workspace.root / f"{name}.strace"
    if tracing():
        argv = [*trace_prefix(trace), *argv]
    started = time.monotonic()
    process = subprocess.run(
        argv,
        cwd=workspace.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    foreign = foreign_connects(trace.read_text(errors="replace")) if tracing() else None
    return Ran(process, foreign, time.monotonic() - started)
