"""Which transcript records a lesson is made of: the order the transcript budget gives them up.

A lesson comes from what went wrong and how it was found: failed and rejected tool calls, errors,
retries, a verifier's rejection, and the first look at each file. Routine successful reads (a
file read again, a listing) say least. The transcript budget reclaims the lowest tier first,
oldest first within it, so an execution's housekeeping goes before its exploration and failures.

The classifier reads every record of the run once, in transcript order, and keeps only the set of
paths already explored (bounded) and, per execution, the path of its latest tool call.
"""

from __future__ import annotations

import json
import re
from enum import IntEnum

from active_memory.screening.required_literals import required_alternatives

__all__ = ["Salience", "SalienceClassifier"]


class Salience(IntEnum):
    """The tiers, lowest reclaimed first."""

    ROUTINE = 0  # a successful read of something already seen, a listing
    ORDINARY = 1  # other calls and their results: edits, builds, commits, passing tests
    CONTEXT = 2  # what the agent said and was told; the first exploration of a file
    LESSON = 3  # failures, errors, rejected calls, retries, a verifier's rejection


# Tools (and shell commands) that only look: their successful results are routine once seen.
_READ_TOOLS = frozenset(
    name.lower()
    for name in ("Read", "Grep", "Glob", "LS", "View", "read_file", "list_files", "list_dir",
                 "grep", "glob", "search", "find", "view", "cat", "open", "NotebookRead")
)  # fmt: skip
_READ_COMMAND = re.compile(
    r"^\s*(?:cd [^;&|]+&&\s*)?(?:cat|ls|head|tail|less|grep|rg|find|fd|tree|wc|sed -n|"
    r"git (?:status|log|diff|show|branch))\b"
)
# A read that failed says so first; what follows a successful read is the file's own text.
_FAILED_CALL = re.compile(
    r"\A\s*(?:\[error\]|(?:Error|error|ERROR)\b|No such file|File does not exist|"
    r"[Pp]ermission denied)"
)
# A command's output: a read's content (source code naming ValueError) is no failure of the read.
_FAILURE = re.compile(
    r"^\s*\[error\]|Traceback \(most recent call last\)|^\s*(?:error|fatal|panic)\b|"
    r"\b(?:FAILED|FAILURES|ERROR|[A-Z][A-Za-z]*(?:Error|Exception))\b|exit (?:code|status) [1-9]|"
    r"command not found|No such file or directory|[Pp]ermission denied|\b(?:was |is )?rejected\b|"
    r"\btimed out\b|\bnot found\b",
    re.MULTILINE,
)
# Every match of _FAILURE holds one of these words (proven on the pattern's parse tree, about
# 0.2 ms once). Looking for them first spares the pattern's try at each position of the many
# outputs that hold none (a tenth of a build's time).
# ("",): were none proven, every text would go to the pattern.
_FAILURE_WORDS: tuple[str, ...] = required_alternatives(_FAILURE) or ("",)
_REJECTION = re.compile(r"\bREJECT(?:ED)?\b|\brejected?\b|\bchanges requested\b|\bnot approved\b")
_RETRY = re.compile(r"\bretry(?:ing)?\b|\bretried\b|\battempt [2-9]\b|\btry(?:ing)? again\b", re.I)
_PATH = re.compile(r"(?:[\w.~-]+/)+[\w.-]+|[\w-]+\.[a-z]{1,5}\b")
_SCAN = 1024  # how much of each end of a text the patterns read: a failure says so at an end
_PATHS_REMEMBERED = 32_768  # kept as hashes: memory stays about a megabyte


def _failed(text: str) -> bool:
    """Whether ``_FAILURE`` finds a failure in ``text``."""
    return any(word in text for word in _FAILURE_WORDS) and _FAILURE.search(text) is not None


def _ends(text: str) -> str:
    return text if len(text) <= 2 * _SCAN else text[:_SCAN] + "\n" + text[-_SCAN:]


def _call_path(tool: str, text: str) -> str:
    """What a tool call looks at: its path or pattern argument, else the first path in it."""
    head = text[:_SCAN]
    try:
        value = json.loads(head) if head.startswith("{") and len(text) <= _SCAN else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        for key in ("file_path", "path", "notebook_path", "pattern", "command", "cmd", "query"):
            found = value.get(key)
            if isinstance(found, str) and found:
                match = _PATH.search(found)
                return f"{tool}:{match.group(0) if match else found[:256]}"
    match = _PATH.search(head)
    return f"{tool}:{match.group(0) if match else head[:256]}"


def _reads(tool: str, text: str) -> bool:
    if tool.lower() in _READ_TOOLS:
        return True
    if tool.lower() not in ("bash", "shell", "exec_command", "run_terminal_cmd", "terminal"):
        return False
    command = text
    if text.startswith("{"):
        try:
            value = json.loads(text[:_SCAN])
        except ValueError:
            value = None
        found = value.get("command") if isinstance(value, dict) else None
        if isinstance(found, list):
            found = " ".join(str(part) for part in found)
        command = found if isinstance(found, str) else text
    return _READ_COMMAND.match(command) is not None


class SalienceClassifier:
    """Tiers the records of one run, fed in transcript order execution by execution."""

    def __init__(self) -> None:
        self._explored: set[int] = set()  # hashes of the (tool, path) pairs already read
        # lane -> (hash of the path, whether a read) of its latest call
        self._call: dict[int, tuple[int, bool] | None] = {}

    def classify(
        self,
        lane: int,
        *,
        role: str | None,
        tool: str | None,
        text: str,
        verifier: bool = False,
        retried: bool = False,
    ) -> Salience:
        """The tier of one record of execution ``lane``. A ``verifier`` execution's rejection is
        a lesson, and so is what the agent says in a ``retried`` execution (a failed attempt or a
        later one): why it failed and what it changed."""
        if role == "assistant" and tool:
            reads = _reads(tool, text)
            path = hash(_call_path(tool, text))
            self._call[lane] = (path, reads)
            if _RETRY.search(text[:_SCAN]):
                return Salience.LESSON
            if not reads:
                return Salience.ORDINARY
            return Salience.ROUTINE if path in self._explored else Salience.CONTEXT
        if role == "tool" or (tool and role != "assistant"):
            call = self._call.pop(lane, None)
            if call is not None and call[1]:
                failed = _FAILED_CALL.search(text[:_SCAN]) is not None
            else:
                failed = _failed(_ends(text))
            if failed:
                return Salience.LESSON
            if call is None or not call[1]:
                return Salience.ORDINARY
            if call[0] in self._explored:
                return Salience.ROUTINE
            if len(self._explored) < _PATHS_REMEMBERED:
                self._explored.add(call[0])
            return Salience.CONTEXT
        scanned = _ends(text)
        if verifier and _REJECTION.search(scanned):
            return Salience.LESSON
        if role == "user" and (_RETRY.search(scanned) or _REJECTION.search(scanned)):
            return Salience.LESSON
        if role == "system":
            return Salience.ORDINARY
        return Salience.LESSON if retried and role == "assistant" else Salience.CONTEXT
