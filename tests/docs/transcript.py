"""Run a page's shell block as a user would and compare its output with what the page shows.

A ``console`` block is a transcript: ``$ command`` lines (a trailing ``\\`` continues one), each
followed by what it printed (stdout and stderr together, as a terminal shows them) and, when it
did not exit 0, a last line ``[exit N]``. All steps of a block run in one ``bash``, in order, in
the test's folder, with the environment the test isolated, the virtualenv's ``active-memory``
and ``python`` first on ``PATH``.

Values that depend on where the test runs (its temporary folders, the virtualenv, a port it
took) are ``aliases``: the page shows a fixed path, the command runs with the real one, and the
output is read back with the page's before :func:`docs.compare.compare` compares it.
"""

from __future__ import annotations

import contextlib
import io
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from docs.compare import compare
from docs.pages import Block

BIN = Path(sys.executable).parent
EXIT = re.compile(r"\[exit (\d+)\]")


@dataclass(frozen=True)
class Step:
    command: str
    shown: tuple[str, ...]
    exit_shown: bool
    gap: int = 0  # blank lines the page puts after the step, between it and the next


def steps(block: Block) -> tuple[Step, ...]:
    """The ``$`` commands of a console block, each with the lines shown after it."""
    found: list[Step] = []
    lines = block.body.splitlines()
    if not lines or not lines[0].startswith("$ "):
        raise AssertionError(f"{block.where}: a transcript starts with a `$ ` command line")
    index = 0
    while index < len(lines):
        command = lines[index][2:]
        while command.endswith("\\"):
            index += 1
            command = command[:-1] + "\n" + lines[index]
        index += 1
        shown: list[str] = []
        while index < len(lines) and not lines[index].startswith("$ "):
            shown.append(lines[index])
            index += 1
        gap = len(shown) - len("\n".join(shown).rstrip("\n").splitlines())
        shown = shown[: len(shown) - gap]
        exit_shown = bool(shown) and EXIT.fullmatch(shown[-1].strip()) is not None
        found.append(Step(command, tuple(shown), exit_shown, gap))
    return tuple(found)


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The test's (already isolated) environment, as a user's shell in the venv has it."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join((str(BIN), env.get("PATH", "")))
    env["PYTHONUNBUFFERED"] = "1"  # stderr and stdout interleave as on a terminal
    # Where this is set, every command would compile the whole package again (~1 s each).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("BASH_ENV", None)
    env.update(extra or {})
    return env


def run_commands(
    commands: Iterable[str], cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120
) -> list[tuple[str, int]]:
    """Each command's output (stdout and stderr together) and exit status, run in one bash."""
    nonce = "\x1e" + secrets.token_hex(8)
    script = ["exec 2>&1 </dev/null"]
    for command in commands:
        # Keep $? for the next command (`echo $?`): the marker must not reset it.
        script += [command, f'__rc=$?; printf "\\n{nonce} %d\\n" "$__rc"; (exit $__rc)']
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd,
        env=environment(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    results: list[tuple[str, int]] = []
    rest = done.stdout
    for _ in script[1::2]:
        before, marker, rest = rest.partition("\n" + nonce + " ")
        if not marker:
            raise AssertionError(f"the shell stopped early ({done.returncode}): {done.stdout}")
        status, _, rest = rest.partition("\n")
        results.append((before, int(status)))
    return results


def unalias(text: str, aliases: Mapping[str, str]) -> str:
    """Real values read back as the page shows them (longest first, so nested paths work)."""
    for shown, real in sorted(aliases.items(), key=lambda item: -len(item[1])):
        text = text.replace(real, shown)
    return text


def alias(text: str, aliases: Mapping[str, str]) -> str:
    for shown, real in sorted(aliases.items(), key=lambda item: -len(item[0])):
        text = text.replace(shown, real)
    return text


def run_transcript(
    block: Block,
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    aliases: Mapping[str, str] | None = None,
    prepared: Mapping[str, Callable[[], object]] | None = None,
    learn: Callable[[str], Mapping[str, str]] | None = None,
    new_ids: bool = False,
) -> str:
    """Run every step of a console block and compare the whole transcript with the page; the
    transcript it ran, read back with the page's paths (another page's copy compares with it).

    ``prepared`` maps a leading step's command to what the test did instead (the session's
    demo folder copied rather than made again); its output must be one the page discards.
    ``learn`` reads each step's output for values later commands use (an id the command drew:
    the page's → the real one); the steps then run one shell each, in order."""
    aliases = dict(aliases or {})
    todo = list(steps(block))
    done: list[tuple[Step, str, int]] = []
    while todo and todo[0].command in (prepared or {}):
        step = todo.pop(0)
        assert not step.shown, f"{block.where}: a prepared step shows output: {step.command}"
        (prepared or {})[step.command]()
        done.append((step, "", 0))
    if learn is None:
        ran = run_commands([alias(step.command, aliases) for step in todo], cwd, env)
        done += [(step, out, status) for step, (out, status) in zip(todo, ran, strict=True)]
    else:
        for step in todo:
            [(out, status)] = run_commands([alias(step.command, aliases)], cwd, env)
            aliases.update(learn(out))
            done.append((step, out, status))
    real: list[str] = []
    for step, out, status in done:
        real += ["$ " + step.command.replace("\n", "\\\n"), *unalias(out, aliases).splitlines()]
        if status or step.exit_shown:
            real.append(f"[exit {status}]")
        real += [""] * step.gap
    transcript = "\n".join(real)
    compare(block, block.body, transcript, new_ids=new_ids)
    return transcript


def run_script(
    block: Block,
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> str:
    """Run a shell block without `$` lines as one script; its output, read back by aliases."""
    [(out, status)] = run_commands([alias(block.body, aliases or {})], cwd, env)
    assert status == 0, f"{block.where}: exit {status}\n{out}"
    return unalias(out, aliases or {})


def run_python(
    block: Block,
    namespace: dict[str, Any] | None = None,
    *,
    aliases: Mapping[str, str] | None = None,
) -> str:
    """Exec a Python block in this process (its imports are already paid for); what it printed.

    ``namespace`` gives the names a fragment uses without defining (a host's ``checkout``)."""
    code = compile(alias(block.body, aliases or {}), block.where, "exec")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, namespace if namespace is not None else {"__name__": "__main__"})
    return unalias(printed.getvalue(), aliases or {})


def _pump(stream: IO[str] | None, lines: queue.Queue[str]) -> None:
    for line in stream or ():
        lines.put(line)


def run_servers(
    block: Block,
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    aliases: Mapping[str, str] | None = None,
    timeout: float = 30,
) -> None:
    """A transcript of commands that serve until stopped: each is started, read for as many
    lines as the page shows, then interrupted (Ctrl-C, as a user stops it)."""
    aliases = aliases or {}
    real: list[str] = []
    for step in steps(block):
        process = subprocess.Popen(
            ["bash", "-c", "exec " + alias(step.command, aliases)],
            cwd=cwd,
            env=environment(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=_pump, args=(process.stdout, lines))
        reader.start()
        printed: list[str] = []
        try:
            while len(printed) < len(step.shown):
                printed.append(lines.get(timeout=timeout).rstrip("\n"))
        except queue.Empty:
            printed.append(f"(nothing more within {timeout} s)")
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            reader.join()
        real += ["$ " + step.command, *unalias("\n".join(printed), aliases).splitlines()]
    compare(block, block.body, "\n".join(real))
