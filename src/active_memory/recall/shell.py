"""Paths a shell command line names, read lexically: nothing runs and nothing is touched.

The script is split with a shell lexer: ``;``, ``&&``, ``||``, ``|``, newlines and ``( … )``
separate commands, quoting is honoured and ``#`` starts a comment. Then, per simple command:

* ``cd dir`` / ``pushd dir`` move the base for later commands (not out of a subshell); a base
  moved outside the workspace keeps every relative path after it outside too;
* wrappers (``sudo``, ``env``, ``time``, ``nice``, ``nohup``, ``xargs``, ``timeout``…) are
  skipped with their options, and the command they run is read instead; ``env -C dir`` and
  ``sudo -D dir`` move that command's base;
* ``git -C dir``, ``make -C dir``, ``tar -C dir``, ``npm --prefix dir``, ``yarn --cwd dir``,
  ``pnpm -C dir`` and ``uv --directory dir`` resolve the command's own paths from ``dir``;
* ``bash -c '…'`` (and ``sh``, ``zsh``…) bodies are read as scripts, to a bounded depth;
* the first operand of ``grep``/``rg``/``sed``/``awk``/``jq`` is a program, not a path (unless
  ``-e``/``-f`` gave it), git's subcommand is not a path, and option values that are never
  paths (``-m message``, ``-k expression``, ``-e pattern``…) are skipped;
* redirection targets (``> out.txt``, ``< in.txt``) are paths; file-descriptor numbers and
  duplications (``2>&1``), here-document delimiters and here-strings are not;
* a ``path::node`` (pytest) or ``path:line[:col]`` (editors, compilers) names ``path``; numbers,
  sed addresses such as ``1,20p``, URLs and words with unexpanded ``$variables`` are not paths;
* every other argument is a candidate path (a glob contributes its literal directory).

Standard library only: the hook helper's store fallback imports it through ``signals`` when a
call carries a command (a ``Read`` never loads it). ``shlex`` and ``re`` (which loads ``enum``
and more, as much again as the rest of a call) are imported when a command is read, not with the
module. The token bound and :func:`glob_prefix` live in ``signals``, which every call loads.
"""

from __future__ import annotations

from active_memory.recall.signals import MAX_SHELL_TOKENS, glob_prefix
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Protocol

    class PathSink(Protocol):
        """Where candidate paths go, and how a directory move is resolved."""

        def path(self, value: str, base: str | None) -> None: ...

        def directory(self, value: str | None, base: str | None) -> str | None: ...


__all__ = ["MAX_DEPTH", "MAX_SHELL_TOKENS", "glob_prefix", "path_word", "read_shell"]

MAX_DEPTH = 4  # nesting of `bash -c` scripts

_OPERATOR_CHARS = "();<>|&\n"
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
_CD = frozenset({"cd", "pushd"})
# Compiled on first use (re keeps them).
# A trailing source position: `src/app.py:12`, `src/app.py:12:5`, `src/app.py:12:`.
_POSITION = r"(?<=[^\s:/]):\d+(?::\d+)?:?$"
# Numbers, ranges and sed addresses: 10, +3, 1.5, 1,20p, 5d, 3:7.
_NUMERIC = r"[+-]?\d[\d,.:+-]*[A-Za-z]?"


class _Options:
    """How one command reads its arguments (built once, below; never changed).

    ``values``: options whose value is never a path (skipped); ``chdir``: options whose value
    is the directory the command's paths are relative to; ``program``: the first operand is a
    program or pattern unless one of ``program_options`` gave it; ``subcommand``: the first
    operand is a subcommand; ``operands``: leading operands of a wrapper that are not the
    command it runs (``timeout 10 cmd``).
    """

    __slots__ = ("chdir", "operands", "program", "program_options", "subcommand", "values")

    def __init__(
        self,
        values: str = "",
        chdir: str = "",
        *,
        program: bool = False,
        program_options: str = "",
        subcommand: bool = False,
        operands: int = 0,
    ) -> None:
        self.values = frozenset(values.split())
        self.chdir = frozenset(chdir.split())
        self.program = program
        self.program_options = frozenset(program_options.split())
        self.subcommand = subcommand
        self.operands = operands


# Commands that run the command after them; their own options are skipped.
_WRAPPERS: dict[str, _Options] = {
    "sudo": _Options("-u -g -h -p -r -t -T -U -C --user --group --host --prompt --role --type "
                     "--other-user --close-from --command-timeout", "-D --chdir"),
    "doas": _Options("-u -C"),
    "env": _Options("-u -S --unset --split-string", "-C --chdir"),
    "time": _Options("-f -o --format --output"),
    "nice": _Options("-n --adjustment"),
    "ionice": _Options("-c -n -p -P -u --class --classdata"),
    "nohup": _Options(),
    "exec": _Options("-a"),
    "command": _Options(),
    "builtin": _Options(),
    "stdbuf": _Options("-i -o -e --input --output --error"),
    "timeout": _Options("-k -s --kill-after --signal", operands=1),
    "xargs": _Options("-d -E -I -L -n -P -s --delimiter --eof --replace --max-lines "
                      "--max-args --max-procs --max-chars --process-slot-var"),
}  # fmt: skip

_SEARCH = _Options("-e -m -A -B -C -t -T --regexp --max-count --context --after-context "
                   "--before-context --type --type-not", program=True,
                   program_options="-e -f --regexp --file")  # fmt: skip
_COMMANDS: dict[str, _Options] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "rg", "ag", "ack"), _SEARCH),
    "sed": _Options("-e -l --expression --line-length", program=True,
                    program_options="-e -f --expression --file"),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _Options(
        "-v -F -e --assign --field-separator --source", program=True,
        program_options="-f -e --file --source")),
    "jq": _Options(program=True),
    # -C moves git only before the subcommand (`git log -C` detects copies).
    "git": _Options("-c --git-dir --work-tree --namespace --config-env -m -b -B --message "
                    "--grep --author --committer --format --pretty --since --until --after "
                    "--before --date", "-C", subcommand=True),
    "make": _Options(chdir="-C --directory"),
    "tar": _Options(chdir="-C --directory"),
    "npm": _Options(chdir="--prefix"),
    "yarn": _Options(chdir="--cwd"),
    "pnpm": _Options(chdir="-C --dir"),
    "uv": _Options(chdir="--directory"),
    "pytest": _Options("-k -m -p -o -n --maxfail --durations"),
    "find": _Options("-name -iname -path -ipath -regex -iregex -type -maxdepth -mindepth -size "
                     "-mtime -mmin -perm -user -group -printf"),
}  # fmt: skip
_PLAIN = _Options()


def path_word(word: str) -> str | None:
    """The path an argument names, or None when it is not path-shaped."""
    if "://" in word:
        return None
    if "::" in word:
        word = word.split("::", 1)[0]
    import re  # see the module note

    word = re.sub(_POSITION, "", word)
    if not word or re.fullmatch(_NUMERIC, word):
        return None
    return word


def _tokens(script: str) -> Iterator[str]:
    import shlex  # see the module note

    lexer = shlex.shlex(script, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    count = 0
    try:
        for token in lexer:
            count += 1
            if count > MAX_SHELL_TOKENS:
                return
            yield token
    except ValueError:
        return  # an unclosed quote: keep what was read before it


def _redirection(token: str) -> str:
    """What the word after a redirection operator is: ``path``, ``dup`` (an fd or a path),
    ``heredoc`` (a here-document delimiter) or ``skip`` (a here-string)."""
    operator = token.strip("()")
    if operator.startswith("<<<"):
        return "skip"
    if operator.startswith("<<"):
        return "heredoc"
    if operator in (">&", "<&"):
        return "dup"
    return "path"


class _HereDocuments:
    """Skips here-document bodies: data for the command, not commands."""

    def __init__(self) -> None:
        self.waiting: list[str] = []  # delimiters whose bodies start at the next line
        self.open: list[str] = []  # delimiters of the bodies being skipped, in order
        self.line: list[str] = []

    def skip(self, token: str) -> bool:
        """Whether ``token`` is part of a body (or the line that ends one)."""
        if not self.open:
            return False
        if "\n" in token and all(char in _OPERATOR_CHARS for char in token):
            if self.line == self.open[:1]:
                self.open.pop(0)
            self.line = []
        else:
            self.line.append(token)
        return True

    def line_ended(self) -> None:
        self.open, self.waiting = self.waiting, []


def read_shell(sink: PathSink, script: str, base: str | None, depth: int = 0) -> None:
    """Send the paths ``script`` names to ``sink``, resolving relative ones from ``base``."""
    stack: list[str | None] = []
    words: list[str] = []
    in_comment = False
    pending: str | None = None  # the kind of word a redirection operator expects next
    documents = _HereDocuments()

    def finish() -> None:
        nonlocal base
        base = _simple_command(sink, words, base, depth)
        words.clear()

    for token in _tokens(script):
        if documents.skip(token):
            continue
        if in_comment:
            if "\n" not in token:
                continue
            in_comment = False  # the newline ends the comment and the command
        if token and all(char in _OPERATOR_CHARS for char in token):
            pending = None
            if "\n" in token and documents.waiting:
                finish()
                documents.line_ended()
                continue
            redirect = "<" in token or ">" in token
            if not redirect and any(char in token for char in ";&|\n"):
                finish()
            if "(" in token:
                finish()
                stack.append(base)
            if ")" in token:
                finish()
                if stack:
                    base = stack.pop()
            if redirect and "(" not in token:  # `<(cmd)` is a process substitution
                if words and words[-1].isdigit():
                    words.pop()  # the file descriptor of `2>file`
                pending = _redirection(token)
            continue
        if pending is not None:
            if pending == "path" or (pending == "dup" and not (token.isdigit() or token == "-")):
                sink.path(glob_prefix(token), base)
            elif pending == "heredoc":
                documents.waiting.append(token.removeprefix("-"))  # `<<-EOF` lexes as `<<`, `-EOF`
            pending = None
            continue
        if token.startswith("#"):
            in_comment = True
            continue
        words.append(token)
    finish()


def _assignments(sink: PathSink, words: list[str], index: int, base: str | None) -> int:
    """Skip ``NAME=value`` words (their values may be paths: ``PYTHONPATH=src cmd``)."""
    while index < len(words) and "=" in words[index] and not words[index].startswith("-"):
        name, _, value = words[index].partition("=")
        if not name.isidentifier():
            break
        word = path_word(value)
        if word is not None:
            sink.path(glob_prefix(word), base)
        index += 1
    return index


def _wrapper(
    sink: PathSink, options: _Options, words: list[str], index: int, base: str | None
) -> tuple[int, str | None]:
    """Skip a wrapper's options (moving the base for ``-C``/``-D``); where its command starts."""
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-"):
            break
        option, equals, value = word.partition("=")
        if option in options.values or option in options.chdir:
            if not equals:
                index += 1
                value = words[index] if index < len(words) else ""
            if option in options.chdir and value:
                sink.path(value, base)
                base = sink.directory(value, base)
        index += 1
    return min(index + options.operands, len(words)), base


def _simple_command(sink: PathSink, words: list[str], base: str | None, depth: int) -> str | None:
    """Send one simple command's paths; returns the base directory after it ran."""
    index = _assignments(sink, words, 0, base)
    command_base = base
    while index < len(words):
        wrapper = _WRAPPERS.get(words[index].rsplit("/", 1)[-1])
        if wrapper is None:
            break
        index, command_base = _wrapper(sink, wrapper, words, index + 1, command_base)
        index = _assignments(sink, words, index, command_base)  # env NAME=value cmd
    if index >= len(words):
        return base
    name, args = words[index], words[index + 1 :]
    if "/" in name:
        sink.path(name, command_base)
    command = name.rsplit("/", 1)[-1]
    if command in _CD:
        target = next((arg for arg in args if not arg.startswith("-")), None)
        if target is None or target.startswith("~") or target == "-":
            return None  # home or the previous directory: unknown from here on
        sink.path(target, command_base)
        return sink.directory(target, command_base)
    if command == "popd":
        return None
    if command in _SHELLS and depth < MAX_DEPTH:
        for position, arg in enumerate(args[:-1]):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
                read_shell(sink, args[position + 1], command_base, depth + 1)
                return base
    _arguments(sink, _COMMANDS.get(command, _PLAIN), args, command_base)
    return base


def _arguments(sink: PathSink, options: _Options, args: list[str], base: str | None) -> None:
    given = options.program and any(
        arg.partition("=")[0] in options.program_options
        or (arg[:2] in options.program_options and not arg.startswith("--"))
        for arg in args
    )
    expect_program = options.program and not given
    expect_subcommand = options.subcommand
    operands_only = False
    position = 0
    while position < len(args):
        arg = args[position]
        position += 1
        if not operands_only and arg.startswith("-") and arg != "-":
            if arg == "--":
                operands_only = True
                continue
            option, equals, value = arg.partition("=")
            # A subcommand's own options are not the command's global ones.
            chdir = option in options.chdir and not (options.subcommand and not expect_subcommand)
            if chdir or option in options.values:
                if not equals and position < len(args):
                    value = args[position]
                    position += 1
                if chdir and value:
                    sink.path(value, base)
                    base = sink.directory(value, base)
            elif equals:
                sink.path(glob_prefix(value), base)  # --rootdir=tests
            continue
        if expect_subcommand:
            expect_subcommand = False
            continue
        if expect_program:
            expect_program = False
            continue
        word = path_word(arg)
        if word is not None:
            sink.path(glob_prefix(word), base)
