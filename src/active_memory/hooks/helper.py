"""``active-memory-hook claude|codex|copilot|pi``: the command a harness spawns per tool call.

It reads the hook payload on stdin, asks the run's broker (helper protocol, 250 ms overall),
prints the answer, then acknowledges it so the broker records the exposure. Whatever fails, it
prints the harness's empty answer ``{}`` and exits 0: a hook that errors can block or deny the
tool it was meant to inform.

Because a harness spawns it on every tool call, the fast path imports nothing but the
interpreter's own built-in modules (``_socket``; ``sys``, ``time`` and ``posix`` are already
loaded), so ``python3 -I -S /path/to/helper.py claude`` runs it standalone, without the package
on the path. Where to reach the broker: ``ACTIVE_MEMORY_BROKER`` (``host:port``) and
``ACTIVE_MEMORY_TOKEN`` from ``ActiveRun.hook_env``, else the ticket file named by
``ACTIVE_MEMORY_TICKET`` or ``--ticket PATH`` (written by ``active-memory serve``). With
``--store PATH --workspace DIR``, when no broker answers it reads the lesson store directly
(imported lazily; slower, for a plain harness user without a running ``serve``).
"""

from __future__ import annotations

import _socket
import posix
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
    value = posix.environ.get(name.encode("ascii"))
    return value.decode("utf-8", "replace") if value else None


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
        if not (answer.startswith(b"{") and answer.endswith(b"}")):
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
    try:
        import active_memory  # noqa: F401  (already importable when installed as a script)
    except ImportError:
        here = __file__.rsplit("/", 3)[0]  # …/active_memory/hooks/helper.py → package parent
        sys.path.insert(0, here)
    from active_memory.hooks.fallback import answer_from_store

    answer = answer_from_store(harness, payload, store=store, workspace=workspace)
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
