"""The session-end hook: queue the finished session for learning, start the worker, exit 0.

A harness runs this when a session ends (Claude Code's and Codex's ``SessionEnd``, Copilot CLI's
``sessionEnd``; ``hooks install --learn`` writes it). It only writes one queue entry, a small
JSON file named after the session, into the learn folder's ``queue/`` (atomically: written
aside, then renamed), and starts ``active-memory learn run`` detached in a session of its own,
without waiting for it. The postmortem itself is the worker's (:mod:`active_memory.learn.worker`).

It never blocks the harness and never fails it: whatever goes wrong, it exits 0 and prints
nothing a harness would read as an answer. A session is not queued when it is a postmortem
specialist's own (the variable a harness lane sets, or the marker its first user message opens
with: :func:`first_message` finds that message as the worker's converters do, and
:func:`opens_with_marker` is the rule both apply, so a session that only quotes the marker is
queued; one skipped by its marker is recorded ``skipped`` in the learn folder's ``sessions/``
for ``learn status``) or when its working folder is one the user excluded (``learn config
--ignore-repos``: a folder name or absolute path, of the working folder or of the checkout
holding it; the worker also matches the repository's key).

Like the recall helper (:mod:`active_memory.hooks.helper`), it runs under ``python3 -I -S`` and
imports only what the interpreter has built in (``posix``, ``_json``, ``_sha256``): no ``os``,
``json`` or ``subprocess``, whose imports would cost more than the rest of the run
(``benchmarks/learn_event_bench.py`` measures it against a bare interpreter start).
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

# The harness table's names (active_memory/harnesses.py) and the specialist session's marks
# (active_memory/lanes.py), copied: this runs without the package on the path.
# tests/learn/test_session_end.py keeps the copies in step.
HARNESSES = ("claude", "codex", "copilot", "pi")
SPECIALIST_SESSION_VARIABLE = "ACTIVE_MEMORY_SPECIALIST_SESSION"
SPECIALIST_SESSION_MARKER = "[active-memory specialist session: never reviewed by learning]"
# active_memory/evidence/inventory_scan.py's SPECIALIST_SESSION_REASON, copied likewise.
SPECIALIST_SESSION_REASON = "it is a postmortem specialist's own session, run on a harness lane"
# Where each harness keeps a session it names only by id (Copilot CLI's payload has no path).
COPILOT_SESSIONS = ("COPILOT_HOME", ".copilot", "session-state")
MAX_PAYLOAD_BYTES = 256 * 1024
MAX_CONFIG_BYTES = 64 * 1024
# The marker opens the first user message, which is within the file's first part.
MARKER_WINDOW_BYTES = 256 * 1024
# What opens a user's message that is the harness's, not the user's ask (Codex's context and
# AGENTS.md, Claude Code's command and reminder tags, an interruption): the converters skip it.
NOT_ASKED = ("<", "# AGENTS.md", "[Request interrupted")
STDIN_TIMEOUT_S = 1.0
# The learn folder's layout (active_memory/learn/folder.py names the same files).
QUEUE_FOLDER = "queue"
SESSIONS_FOLDER = "sessions"
CONFIG_FILE = "config.json"
WORKER_LOG = "worker.log"
ENTRY_SUFFIX = ".json"
_S_IFMT = 0o170000
_S_IFREG = 0o100000
_S_IFDIR = 0o040000


class _Skip(Exception):
    """Any reason not to queue; never leaves this module."""


def _posix() -> Any:
    import posix  # built in and already loaded

    return posix


def _env(name: str) -> str | None:
    value = _posix().environ.get(name.encode("ascii"))
    return value.decode("utf-8", "surrogateescape") if value else None


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise _Skip  # duplicate keys: readers disagree on which one counts
    return document


def _reject(constant: str) -> object:
    raise _Skip


class _Strict:
    """Options for the C scanner: plain JSON only, duplicate keys refused."""

    strict = True
    object_hook = None
    object_pairs_hook = staticmethod(_unique)
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject)


def decode(text: str) -> object:
    """One JSON document, strictly; raises on anything else."""
    from _json import make_scanner

    start = len(text) - len(text.lstrip(" \t\n\r"))
    value, end = make_scanner(_Strict)(text, start)  # type: ignore[arg-type]
    if text[end:].strip(" \t\n\r"):
        raise _Skip
    return value


def quote(value: str | None) -> str:
    """A JSON string literal (or null), without the ``json`` package."""
    if value is None:
        return "null"
    out = ['"']
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char < " " or "\ud800" <= char <= "\udfff":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _read_stdin(deadline: float) -> bytes:
    """The payload, read until EOF or the deadline (a harness that never closes stdin)."""
    posix = _posix()
    fd = 0
    posix.set_blocking(fd, False)
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_PAYLOAD_BYTES:
        try:
            chunk = posix.read(fd, 65536)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise _Skip from None
            time.sleep(0.002)
            continue
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > MAX_PAYLOAD_BYTES:
        raise _Skip
    return b"".join(chunks)


def _options(argv: list[str]) -> tuple[str, dict[str, str]]:
    if not argv or argv[0] not in HARNESSES:
        raise _Skip
    options: dict[str, str] = {}
    rest = argv[1:]
    for position in range(0, len(rest) - 1, 2):
        if rest[position].startswith("--"):
            options[rest[position][2:]] = rest[position + 1]
    if not options.get("folder", "").startswith("/"):
        raise _Skip
    return argv[0], options


def _text(payload: dict[str, object], *names: str) -> str | None:
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _join(*parts: str) -> str:
    return "/".join(part.rstrip("/") for part in parts[:-1]) + "/" + parts[-1]


def session_file(harness: str, payload: dict[str, object]) -> str | None:
    """The finished session's file: the payload's ``transcript_path`` (Claude Code, Codex), else
    Copilot CLI's folder for the session id it names."""
    path = _text(payload, "transcript_path", "transcriptPath", "session_file")
    if path is not None:
        return path
    session_id = _text(payload, "sessionId", "session_id")
    if harness != "copilot" or session_id is None or "/" in session_id or ".." in session_id:
        return None
    variable, home, folder = COPILOT_SESSIONS
    base = _join(_env(variable) or _join(_env("HOME") or "", home), folder)
    # <id>/events.jsonl since Copilot CLI keeps a folder per session; <id>.jsonl before.
    nested = _join(base, session_id, "events.jsonl")
    flat = _join(base, session_id + ".jsonl")
    return flat if not _is_file(nested) and _is_file(flat) else nested


def _file_type(path: str) -> int | None:
    """The ``S_IFMT`` bits of what ``path`` leads to (links followed); None when nothing."""
    try:
        mode: int = _posix().stat(path).st_mode
    except OSError:
        return None
    return mode & _S_IFMT


def _is_file(path: str) -> bool:
    return _file_type(path) == _S_IFREG


def _is_dir(path: str) -> bool:
    return _file_type(path) == _S_IFDIR


def opens_with_marker(text: str | None) -> bool:
    """Whether a session whose first user message (its initial input) is ``text`` is a
    specialist's own: the one rule the hook and the worker apply."""
    return text is not None and text.startswith(SPECIALIST_SESSION_MARKER)


def _texts(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in ("text", "input_text")
        and isinstance(block.get("text"), str)
    ]


def _user_texts(harness: str, value: dict[str, object]) -> list[str]:
    """The texts of a user's message on one session line (none on any other line)."""
    kind = value.get("type")
    if harness == "copilot":
        data = value.get("data")
        if kind != "user.message" or not isinstance(data, dict):
            return []
        return _texts(data.get("content"))
    if harness == "codex":
        # A current rollout wraps each item in a payload; a legacy one writes it bare.
        payload = value.get("payload") if kind in ("response_item", "event_msg") else value
        if not isinstance(payload, dict):
            return []
        if payload.get("type") == "user_message":
            return _texts(payload.get("message"))
        message: object = payload
    elif kind in ("user", "message") and not value.get("isMeta"):
        message = value.get("message")  # Claude Code's user line, pi's message line
    else:
        return []
    if not isinstance(message, dict) or message.get("role") != "user":
        return []
    return _texts(message.get("content"))


def first_message(harness: str, head: bytes) -> str | None:
    """The first user message in ``head`` (a session file's first part) as the converters tell
    it: the first text of a user's message that is the user's ask, not the harness's (NOT_ASKED);
    None when ``head`` holds none."""
    lines = head.split(b"\n")
    if len(head) >= MARKER_WINDOW_BYTES:
        lines.pop()  # cut by the window
    for line in lines:
        if not line.strip():
            continue
        try:
            value = decode(line.decode("utf-8"))
        except Exception:  # a line no converter reads either
            continue
        if not isinstance(value, dict):
            continue
        for text in _user_texts(harness, value):
            if text.strip() and not text.strip().startswith(NOT_ASKED):
                return text
    return None


def _specialist(harness: str, path: str) -> bool:
    """Whether the session's first user message opens with the specialist marker (the file is
    read up to the window, never past it)."""
    posix = _posix()
    fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK | getattr(posix, "O_CLOEXEC", 0))
    try:
        head: bytes = posix.read(fd, MARKER_WINDOW_BYTES)
    finally:
        posix.close(fd)
    return opens_with_marker(first_message(harness, head))


def _config_ignores(folder: str) -> list[str]:
    """The ``ignore_repos`` of the learn folder's ``config.json`` (none when it is missing)."""
    posix = _posix()
    path = _join(folder, CONFIG_FILE)
    try:
        fd = posix.open(path, posix.O_RDONLY | posix.O_NONBLOCK)
    except OSError:
        return []
    try:
        data: bytes = posix.read(fd, MAX_CONFIG_BYTES)
    finally:
        posix.close(fd)
    document = decode(data.decode("utf-8"))
    values = document.get("ignore_repos") if isinstance(document, dict) else None
    return [value for value in values if isinstance(value, str)] if isinstance(values, list) else []


def folder_names(cwd: str) -> list[str]:
    """What an ignore value may name for ``cwd``: its name and path, and those of the checkout
    holding it (the nearest folder above with a ``.git``)."""
    path = "/" + cwd.strip("/") if cwd.startswith("/") else cwd.rstrip("/")
    names = [path, path.rsplit("/", 1)[-1]]
    probe = path
    while probe:
        if _is_dir(_join(probe, ".git")) or _is_file(_join(probe, ".git")):
            names += [probe, probe.rsplit("/", 1)[-1]]
            break
        probe = probe.rsplit("/", 1)[0]
    return names


def _entry_key(harness: str, path: str) -> str:
    """The entry's name: the same session file always gets the same one."""
    # CPython's own SHA-256 (_sha256 up to 3.11, _sha2 after): hashlib would load OpenSSL.
    sha256 = __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    digest: str = sha256(f"{harness}\0{path}".encode("utf-8", "surrogateescape")).hexdigest()
    return digest[:32]


def _make_folders(path: str) -> None:
    """``path`` and its missing parents, private (``os.makedirs`` without importing ``os``)."""
    if _is_dir(path):
        return
    parent = path.rsplit("/", 1)[0]
    if parent and parent != path:
        _make_folders(parent)
    try:
        _posix().mkdir(path, 0o700)
    except FileExistsError:  # made meanwhile (contextlib would cost an import)
        return


def _fields(harness: str, path: str, payload: dict[str, object]) -> str:
    """The session's fields of a queue entry or a state, as JSON members."""
    fields = (
        ("harness", harness),
        ("session_file", path),
        ("session_id", _text(payload, "session_id", "sessionId")),
        ("cwd", _text(payload, "cwd")),
        ("end_reason", _text(payload, "reason")),
    )
    return ", ".join(f"{quote(name)}: {quote(value)}" for name, value in fields)


def _write_aside(folder: str, name: str, text: str) -> None:
    """``folder/name`` holds ``text``, written aside and renamed, so a reader sees all or none."""
    posix = _posix()
    _make_folders(folder)
    temporary = _join(folder, f".{name}.{posix.getpid()}.tmp")
    flags = posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | getattr(posix, "O_CLOEXEC", 0)
    fd = posix.open(temporary, flags, 0o600)
    try:
        posix.write(fd, text.encode("utf-8", "surrogateescape"))
    finally:
        posix.close(fd)
    posix.rename(temporary, _join(folder, name))


def write_entry(folder: str, harness: str, path: str, payload: dict[str, object]) -> str:
    """Write the queue entry for ``path`` atomically; the entry's file name."""
    queued_ms = int(time.time() * 1000)
    text = "{" + _fields(harness, path, payload) + f', "queued_ms": {queued_ms}' + "}\n"
    name = _entry_key(harness, path) + ENTRY_SUFFIX
    _write_aside(_join(folder, QUEUE_FOLDER), name, text)
    return name


def record_specialist(folder: str, harness: str, path: str, payload: dict[str, object]) -> None:
    """Record the session, not queued, as ``skipped`` for ``learn status`` (the state the worker
    would write: learn/folder.py's SessionState)."""
    now = int(time.time() * 1000)
    key = _entry_key(harness, path)
    members = (
        f"{quote('key')}: {quote(key)}, {_fields(harness, path, payload)}, "
        f'"state": "skipped", "code": "specialist_session", '
        f'"reason": {quote(SPECIALIST_SESSION_REASON)}, "queued_ms": {now}, "updated_ms": {now}'
    )
    _write_aside(_join(folder, SESSIONS_FOLDER), key + ENTRY_SUFFIX, "{" + members + "}\n")


def start_worker(options: dict[str, str]) -> None:
    """Start ``active-memory learn run`` detached (its own session, stdio on /dev/null and its
    log), never waited for; one already running keeps the lock and this one exits at once."""
    python = options.get("python")
    if not python:
        return
    posix = _posix()
    argv = [python, "-m", "active_memory.cli.main", "learn", "run", "--quiet"]
    if options.get("store"):
        argv += ["--store", options["store"]]
    log = _join(options["folder"], WORKER_LOG)
    environ = dict(posix.environ)
    environ.pop(SPECIALIST_SESSION_VARIABLE.encode("ascii"), None)
    actions = [
        (posix.POSIX_SPAWN_OPEN, 0, "/dev/null", posix.O_RDONLY, 0),
        (posix.POSIX_SPAWN_OPEN, 1, log, posix.O_WRONLY | posix.O_CREAT | posix.O_APPEND, 0o600),
        (posix.POSIX_SPAWN_DUP2, 1, 2),
    ]
    posix.posix_spawn(python, argv, environ, file_actions=actions, setsid=True)


def queue_session(harness: str, options: dict[str, str], payload: dict[str, object]) -> str:
    """Queue the session ``payload`` names; the entry's name. _Skip for a session that is not
    queued (a specialist's, an excluded folder's, or no session file)."""
    if _env(SPECIALIST_SESSION_VARIABLE):
        raise _Skip
    path = session_file(harness, payload)
    if path is None or not path.startswith("/") or not _is_file(path):
        raise _Skip
    if _specialist(harness, path):
        record_specialist(options["folder"], harness, path, payload)
        raise _Skip
    cwd = _text(payload, "cwd")
    ignored = _config_ignores(options["folder"])
    if cwd is not None and ignored and set(ignored) & set(folder_names(cwd)):
        raise _Skip
    return write_entry(options["folder"], harness, path, payload)


def main(argv: list[str] | None = None) -> int:
    """Queue the session on stdin's payload; exit 0 whatever happens."""
    try:
        harness, options = _options(sys.argv[1:] if argv is None else argv)
        payload = decode(_read_stdin(time.monotonic() + STDIN_TIMEOUT_S).decode("utf-8"))
        if not isinstance(payload, dict):
            raise _Skip
        queue_session(harness, options, payload)
        start_worker(options)
    except Exception:  # fail open: a session end is never held up or failed by learning
        pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
