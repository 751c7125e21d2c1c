"""The paths a tool call touched, from its arguments, never the arguments themselves.

Three kinds of argument name a path: a path-valued key (``path``, ``file_path``…), the file
headers of a patch (``*** Update File: src/app.py``) and the operands of a shell command
(``sed -n 1,40p src/app.py``). Shell operands are a heuristic: a word that is not an option, not
a URL, holds no shell syntax, and looks like a path (a slash, or a name with an extension).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from active_memory.evidence.sources.lanes import relative_path

__all__ = ["argument_paths", "patch_paths", "shell_paths"]

PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "dir_path", "directory")
MAX_PATHS = 8
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$",
                           re.MULTILINE)  # fmt: skip
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "/bin/bash", "/bin/sh", "/bin/zsh",
                     "/usr/bin/bash", "pwsh", "powershell"})  # fmt: skip
_SEPARATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "(", ")", "|&"})
_REDIRECTS = frozenset({"<", ">", ">>", "<<", ">&", "&>", "<>"})
_NAME_WITH_EXTENSION = re.compile(r"^[\w.@+-]*\w\.[A-Za-z0-9]{1,10}$")
_SHELL_SYNTAX = re.compile(r"[*?$`{}()<>|;&!\"'\\=,]")
_SCRIPT_CHARS = 64 * 1024


def patch_paths(patch: str, cwd: str | None) -> list[str]:
    """The files a Codex-style patch adds, updates, deletes or moves to."""
    found = [relative_path(match, cwd) for match in _PATCH_HEADER.findall(patch[:_SCRIPT_CHARS])]
    return list(dict.fromkeys(found))[:MAX_PATHS]


def _words(script: str) -> list[str]:
    lexer = shlex.shlex(script[:_SCRIPT_CHARS], posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: fall back to plain words
        return script[:_SCRIPT_CHARS].split()


def _looks_like_path(word: str) -> bool:
    if not word or len(word) > 512 or word.startswith(("-", "~")) or "://" in word:
        return False
    if _SHELL_SYNTAX.search(word) or word.isdigit():
        return False
    return "/" in word or _NAME_WITH_EXTENSION.match(word) is not None


def _operands(words: list[str]) -> Iterable[str]:
    program = True  # the first word of each command is the program, never an operand
    for word in words:
        if word in _REDIRECTS:
            continue  # the file a redirect names is an operand of the same command
        if word in _SEPARATORS or set(word) <= set("|&;<>()"):
            program = True
            continue
        if program:
            program = False
            continue
        yield word


def shell_paths(command: Any, cwd: str | None) -> list[str]:
    """Path operands of a shell command, given as an argv list or one command string.

    ``bash -lc SCRIPT`` (any common shell) is read as its script; an argv that carries a patch
    (``apply_patch PATCH``) yields the patch's file headers.
    """
    if isinstance(command, list):
        argv = [str(word) for word in command[:256] if isinstance(word, str | int)]
        if any("*** Begin Patch" in word for word in argv):
            return patch_paths("\n".join(argv), cwd)
        if len(argv) >= 3 and argv[0] in _SHELLS and argv[1].startswith("-"):
            words = _words(argv[-1])
        else:
            words = argv
    elif isinstance(command, str):
        if "*** Begin Patch" in command:
            return patch_paths(command, cwd)
        words = _words(command)
    else:
        return []
    found = [relative_path(word, cwd) for word in _operands(words) if _looks_like_path(word)]
    return list(dict.fromkeys(found))[:MAX_PATHS]


def argument_paths(arguments: Mapping[str, Any], cwd: str | None) -> list[str]:
    """Paths from path-valued keys, a patch (``input``/``patch``) and a command (``command``,
    ``cmd``), relative to ``workdir`` when the call names one, else to ``cwd``."""
    workdir = arguments.get("workdir") or arguments.get("cwd")
    base = workdir if isinstance(workdir, str) and workdir.startswith("/") else cwd
    found: list[str] = []
    for key in PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            found.append(relative_path(value, base))
        elif isinstance(value, list):
            found.extend(relative_path(item, base) for item in value[:MAX_PATHS]
                         if isinstance(item, str) and item)  # fmt: skip
    for key in ("input", "patch"):
        value = arguments.get(key)
        if isinstance(value, str) and "*** Begin Patch" in value:
            found.extend(patch_paths(value, base))
    for key in ("command", "cmd"):
        if key in arguments:
            found.extend(shell_paths(arguments[key], base))
    return list(dict.fromkeys(found))[:MAX_PATHS]
