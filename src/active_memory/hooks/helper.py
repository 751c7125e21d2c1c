"""``active-memory-hook claude|codex|copilot|pi``: the command a harness spawns per tool call.

It reads the hook payload on stdin, asks the run's broker (helper protocol, 250 ms overall),
checks the answer is the harness's own answer shape (valid JSON: ``{}``, or only
``additionalContext`` text, never a permission decision or anything else a rogue listener on
the port might send), prints it, then acknowledges it so the broker records the exposure.
Whatever fails, it prints the harness's empty answer ``{}`` and exits 0, on every platform: a
hook that errors can block or deny the tool it was meant to inform.

Because a harness spawns it on every tool call, the fast path imports nothing but the
interpreter's own modules (``_socket``, and ``_json`` once an answer arrives; ``sys``, ``time``
and ``posix`` are already loaded; the ``json`` package would also load ``re`` and cost more
than the rest of the run), so ``python3 -I -S /path/to/helper.py claude`` runs it standalone,
without the package on the path. Where to reach the broker: ``ACTIVE_MEMORY_BROKER``
(``host:port``) and ``ACTIVE_MEMORY_TOKEN`` from ``ActiveRun.hook_env``, else the ticket file
named by ``ACTIVE_MEMORY_TICKET`` or ``--ticket PATH`` (written by ``active-memory serve``).
With ``--store PATH --workspace DIR``, when no broker answers it reads the lesson store
directly (:mod:`active_memory.hooks.fallback`, imported only then, with the payload decoded as
strictly as a broker answer): for a plain harness user without a running ``serve``.
"""

from __future__ import annotations

import _socket
import sys
import time

HARNESSES = ("claude", "codex", "copilot", "pi")
EMPTY = b"{}"
TIMEOUT_S = 0.25
MAX_REQUEST_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 32 * 1024
ACK = b'{"ack":true}'


class _Failed(Exception):
    """Any reason to answer empty; never leaves this module."""


class _Output:
    """The one answer this run prints: later writes are ignored, so stdout stays valid JSON."""

    def __init__(self) -> None:
        self.printed = False

    def print(self, body: bytes) -> None:
        if self.printed:
            return
        self.printed = True
        sys.stdout.buffer.write(body + b"\n")
        sys.stdout.buffer.flush()


def _env(name: str) -> str | None:
    try:
        import posix  # built in and already loaded: os would cost an import
    except ImportError:  # Windows has no posix module
        import os

        return os.environ.get(name) or None
    value = posix.environ.get(name.encode("ascii"))
    return value.decode("utf-8", "replace") if value else None


# The answers a harness accepts from this hook, mirroring hooks/claude.py and hooks/copilot.py
# (a test keeps them in step): context text only, never a decision.
_NESTED = frozenset({"claude", "codex"})  # {"hookSpecificOutput": {...}}; others are flat
_EVENT = "PreToolUse"
_JSON_SPACE = " \t\n\r"


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    document = dict(pairs)
    if len(document) != len(pairs):
        raise _Failed  # duplicate keys: readers disagree on which one counts
    return document


def _reject(constant: str) -> object:
    raise _Failed  # NaN and Infinity are not JSON


class _Strict:
    """Options for the C scanner: plain JSON only, duplicate keys refused."""

    strict = True
    object_hook = None
    object_pairs_hook = staticmethod(_unique)
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject)


def _decode(text: str) -> object:
    """One JSON document, strictly; raises on anything else."""
    try:
        from _json import make_scanner
    except ImportError:  # an interpreter without CPython's accelerator
        import json

        decoded: object = json.loads(text, object_pairs_hook=_unique, parse_constant=_reject)
        return decoded
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    value, end = make_scanner(_Strict)(text, start)  # type: ignore[arg-type]
    if text[end:].strip(_JSON_SPACE):
        raise _Failed
    return value


def valid_answer(harness: str, body: bytes) -> bool:
    """Whether ``body`` is an answer ``harness`` accepts: ``{}`` or context text only."""
    try:
        document = _decode(body.decode("utf-8"))
    except Exception:  # any decoding failure means: do not relay it
        return False
    if not isinstance(document, dict):
        return False
    if not document:
        return True
    if harness not in _NESTED:
        return list(document) == ["additionalContext"] and isinstance(
            document["additionalContext"], str
        )
    inner = document.get("hookSpecificOutput") if list(document) == ["hookSpecificOutput"] else None
    return (
        isinstance(inner, dict)
        and sorted(inner) == ["additionalContext", "hookEventName"]
        and inner["hookEventName"] == _EVENT
        and isinstance(inner["additionalContext"], str)
    )


def _quote(value: str | None) -> bytes:
    """A JSON string literal, without importing ``json`` (it costs more than this whole run)."""
    if value is None:
        return b"null"
    out = ['"']
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char < " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out).encode("utf-8", "surrogatepass")


def _options(argv: list[str]) -> tuple[str, dict[str, str]]:
    if not argv or argv[0] not in HARNESSES:
        raise _Failed
    options: dict[str, str] = {}
    rest = argv[1:]
    for position in range(0, len(rest) - 1, 2):
        if rest[position].startswith("--"):
            options[rest[position][2:]] = rest[position + 1]
    return argv[0], options


def _read_ticket(path: str) -> tuple[str, int, str]:
    """``url`` and the bearer token from a ticket (a private curl config file)."""
    with open(path, encoding="utf-8") as ticket:
        text = ticket.read(8192)
    url = token = None
    for line in text.splitlines():
        name, _, value = line.partition("=")
        value = value.strip().strip('"')
        if name.strip() == "url":
            url = value
        elif name.strip() == "header" and value.lower().startswith("authorization: bearer "):
            token = value[len("authorization: bearer ") :].strip()
    if not url or not token or not url.startswith("http://"):
        raise _Failed
    host, _, port = url[len("http://") :].split("/", 1)[0].rpartition(":")
    return host, int(port), token


def _broker(options: dict[str, str]) -> tuple[str, int, str] | None:
    address, token = _env("ACTIVE_MEMORY_BROKER"), _env("ACTIVE_MEMORY_TOKEN")
    if address and token:
        host, _, port = address.rpartition(":")
        return host, int(port), token
    ticket = _env("ACTIVE_MEMORY_TICKET") or options.get("ticket")
    if ticket:
        try:
            return _read_ticket(ticket)
        except (OSError, ValueError, _Failed):
            return None
    return None


def _receive(sock: _socket.socket, size: int, deadline: float) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        _settimeout(sock, deadline)
        chunk = sock.recv(min(remaining, 65536))
        if not chunk:
            raise _Failed
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _settimeout(sock: _socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Failed
    sock.settimeout(left)


def _ask(
    out: _Output, broker: tuple[str, int, str], harness: str, payload: bytes, deadline: float
) -> bool:
    """Ask the broker; print and acknowledge its answer. False when it did not answer."""
    host, port, token = broker
    request = b"".join((
        b'{"token":', _quote(token), b',"harness":', _quote(harness),
        b',"node_id":', _quote(_env("ACTIVE_MEMORY_NODE")),
        b',"conversation_id":', _quote(_env("ACTIVE_MEMORY_CONVERSATION")),
        b',"execution_id":', _quote(_env("ACTIVE_MEMORY_EXECUTION")),
        b',"payload":', payload.strip() or b"null", b"}",
    ))  # fmt: skip
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    sock = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        _settimeout(sock, deadline)
        sock.connect((host.strip("[]"), port))
        sock.sendall(len(request).to_bytes(4, "big") + request)
        size = int.from_bytes(_receive(sock, 4, deadline), "big")
        if not 2 <= size <= MAX_RESPONSE_BYTES:
            return False
        answer = _receive(sock, size, deadline)
        if not valid_answer(harness, answer):
            return False
        out.print(answer)
        # Acknowledged only once printed; if this fails the broker keeps the cards eligible.
        sock.sendall(len(ACK).to_bytes(4, "big") + ACK)
        return True
    except (OSError, _Failed):
        return out.printed
    finally:
        sock.close()


def _from_store(out: _Output, harness: str, payload: bytes, options: dict[str, str]) -> bool:
    """Recall straight from the lesson store when no broker answers (slow path)."""
    store, workspace = options.get("store"), options.get("workspace")
    if not store or not workspace:
        return False
    # This process ends within milliseconds: collecting cycles among the thousands of objects
    # the imports and the cached index create would only cost it time.
    import gc  # built in; imported here so the broker path's module set stays the bare one

    gc.disable()
    try:
        import active_memory  # noqa: F401  (already importable when installed as a script)
    except ImportError:
        # …/active_memory/hooks/helper.py → the package's parent, with either separator.
        here = __file__.replace("\\", "/").rsplit("/", 3)[0]
        sys.path.insert(0, here)
    from active_memory.hooks.fallback import answer_from_store

    document = _decode(payload.decode("utf-8"))  # strictly, as broker answers are read
    answer = answer_from_store(harness, document, store=store, workspace=workspace)
    if answer is None:
        return False
    body, commit = answer
    out.print(body)
    commit()
    return True


def main(argv: list[str] | None = None) -> int:
    deadline = time.monotonic() + TIMEOUT_S
    out = _Output()
    # contextlib.suppress would cost more import time than the rest of this process.
    try:
        harness, options = _options(sys.argv[1:] if argv is None else argv)
        payload = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
        if len(payload) > MAX_REQUEST_BYTES:
            raise _Failed
        broker = _broker(options)
        answered = broker is not None and _ask(out, broker, harness, payload, deadline)
        if not answered:
            _from_store(out, harness, payload, options)
    except BaseException:  # a hook must never fail the tool call it informs
        pass
    try:  # noqa: SIM105
        out.print(EMPTY)
    except BaseException:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
