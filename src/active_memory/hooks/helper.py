"""``active-memory-hook claude|codex|copilot|pi``: the command a harness spawns per tool call.

It reads the hook payload on stdin, asks the run's broker (helper protocol), checks the answer
is signed by the broker it was issued for (an HMAC-SHA256 tag keyed by the run's token over this
call's fresh nonce; the token itself is never sent, so a listener that bound the port after the
broker exited learns nothing and is never relayed) and that it is the harness's own answer shape
(valid JSON: ``{}``, or only ``additionalContext`` text, never a permission decision), prints
it, then acknowledges it so the broker records the exposure. The whole call, reading stdin and
the ticket included, stays within 250 ms: stdin is read with a deadline, and the ticket is
opened without blocking and read only when it is a regular file only this user can read.
Whatever fails, it prints the harness's empty answer ``{}`` and exits 0, on every platform: a
hook that errors can block or deny the tool it was meant to inform.

Because a harness spawns it on every tool call, the fast path imports nothing but the
interpreter's own modules (``_socket`` and ``_sha256`` once a broker is asked, and ``_json``
only for an answer other than ``{}``; ``sys``, ``time`` and ``posix`` are already loaded; the
``json`` package would also load ``re`` and cost more than the rest of the run; not even
``__future__``: the few annotations that name a type only checkers import are strings), so
``python3 -I -S /path/to/helper.py claude`` runs it standalone, without the package on the path.

Where to reach the broker: ``ACTIVE_MEMORY_BROKER`` (``host:port``) and ``ACTIVE_MEMORY_TOKEN``
from ``ActiveRun.hook_env``, else the ticket file named by ``ACTIVE_MEMORY_TICKET`` or
``--ticket PATH`` (written by ``active-memory serve``). With ``--store PATH --workspace DIR``,
when no broker answers it reads the lesson store directly (:mod:`active_memory.hooks.fallback`,
imported only then, with the payload decoded as strictly as a broker answer): for a plain
harness user without a running ``serve``.

Run as the installed command (:func:`run`), it ends the process as soon as its answer is
flushed, without tearing the interpreter down: freeing every module and object one by one is
about a seventh of a bare interpreter's own run, and more after a store fallback's imports.
"""

import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing; type checkers see True
if TYPE_CHECKING:
    import _socket
    from typing import Any

# The harness table's names (active_memory/harnesses.py), copied: this runs as a script without
# the package on the path. tests/test_harnesses.py keeps the copy in step.
HARNESSES = ("claude", "codex", "copilot", "pi")
EMPTY = b"{}"
TIMEOUT_S = 0.25
MAX_REQUEST_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 32 * 1024
ACK = b'{"ack":true}'
# The broker's signing contexts and tag size (recall/wire.py; a test keeps them in step).
MAC_BYTES = 32
REQUEST_CONTEXT = b"active-memory request 2\n"
ANSWER_CONTEXT = b"active-memory answer 2\n"
# Claude Code's restricted mode (hooks/claude.py; a test keeps them in step): user hooks' context
# is trimmed to 8,000 characters, so the frame asks for cards that fit that.
RESTRICTED_SETTING = "CLAUDE_CODE_RESTRICT_PERSONAL_CONFIG"
# Set by a harness lane in the specialist's session (lanes.SPECIALIST_SESSION_VARIABLE; a test
# keeps them equal): no recall into a specialist, even where the harness cannot switch off the
# user's hooks for one session (Copilot CLI's user-level hooks).
SPECIALIST_SESSION_VARIABLE = "ACTIVE_MEMORY_SPECIALIST_SESSION"
RESTRICTED_CONTEXT_CHARS = 8_000
_OFF = ("", "0", "false", "no", "off")
_OFF_OR_UNSET = (None, *_OFF)
# With a store fallback, the broker gets the budget less what the fallback needs.
FALLBACK_RESERVE_S = 0.1
MAX_TICKET_BYTES = 8192


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
# (tests/hooks/test_helper.py and tests/test_harnesses.py keep them in step): context text
# only, never a decision.
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
    if body == EMPTY:
        return True  # the usual answer: no card for this call, and no _json to load for it
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


def _posix() -> "Any":
    try:
        import posix  # built in and already loaded: os would cost an import
    except ImportError:  # Windows has no posix module
        return None
    return posix


def _read_stdin(deadline: float) -> bytes:
    """The payload, read until EOF or the deadline (a harness that never closes stdin)."""
    posix = _posix()
    if posix is None:  # no non-blocking pipes without posix: read as before
        data: bytes = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
        return data
    fd = sys.stdin.fileno()
    blocking = posix.get_blocking(fd)
    if blocking:
        posix.set_blocking(fd, False)
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_REQUEST_BYTES:
            try:
                chunk = posix.read(fd, 65536)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Failed from None
                time.sleep(min(left, 0.001))
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        if blocking:  # stdin may be shared with the harness: leave it as it was
            posix.set_blocking(fd, True)
    return b"".join(chunks)


def _ticket_text(path: str) -> str:
    """A ticket's text: opened without blocking (a FIFO cannot hold the call), and read only
    when it is a regular file of this user that no one else can read or write."""
    posix = _posix()
    if posix is None:
        with open(path, encoding="utf-8") as ticket:
            return ticket.read(MAX_TICKET_BYTES)
    flags = posix.O_RDONLY | posix.O_NONBLOCK | posix.O_NOCTTY | getattr(posix, "O_CLOEXEC", 0)
    fd = posix.open(path, flags)
    try:
        info = posix.fstat(fd)
        if info.st_mode & 0o170000 != 0o100000:  # S_ISREG, without importing stat
            raise _Failed
        if info.st_uid != posix.getuid() or info.st_mode & 0o077:
            raise _Failed  # others could read the token or swap the broker
        data: bytes = posix.read(fd, MAX_TICKET_BYTES)
    finally:
        posix.close(fd)
    return data.decode("utf-8")


def _read_ticket(path: str) -> tuple[str, int, str]:
    """``url`` and the bearer token from a ticket (a private curl config file)."""
    text = _ticket_text(path)
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
        # A malformed address names no broker: the store fallback (or a ticket) still answers.
        # ASCII digits only: isdigit() also holds for digits int() refuses ("²"), whose
        # ValueError would end the call with {} before the fallback.
        if host and port.isascii() and port.isdigit() and int(port) < 65536:
            return host, int(port), token
    ticket = _env("ACTIVE_MEMORY_TICKET") or options.get("ticket")
    if ticket:
        try:
            return _read_ticket(ticket)
        except (OSError, ValueError, _Failed):
            return None
    return None


def _sha256() -> "Any":
    """CPython's own SHA-256 (``_sha256`` up to 3.11, ``_sha2`` after): hashlib loads OpenSSL."""
    try:
        return __import__("_sha2" if sys.version_info >= (3, 12) else "_sha256").sha256
    except (ImportError, AttributeError):
        import hashlib

        return hashlib.sha256


# The translation tables that XOR a key with HMAC's inner and outer pads, made on first use
# (a call signs twice; a call that asks no broker never needs them).
_PADS: list[bytes] = []


def hmac_sha256(key: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA256 (RFC 2104) of the concatenated ``parts``, without the ``hmac`` module."""
    sha256 = _sha256()
    if len(key) > 64:
        key = sha256(key).digest()
    key = key + bytes(64 - len(key))
    if not _PADS:
        _PADS.extend(bytes(byte ^ pad for byte in range(256)) for pad in (0x36, 0x5C))
    inner = sha256(key.translate(_PADS[0]))
    for part in parts:
        inner.update(part)
    outer = key.translate(_PADS[1])
    digest: bytes = sha256(outer + inner.digest()).digest()
    return digest


def _same(left: bytes, right: bytes) -> bool:
    """Equal, in time independent of where they differ."""
    if len(left) != len(right):
        return False
    difference = 0
    for one, other in zip(left, right, strict=True):
        difference |= one ^ other
    return difference == 0


def _nonce() -> bytes:
    posix = _posix()
    if posix is None:
        import os

        return os.urandom(16).hex().encode("ascii")
    random: bytes = posix.urandom(16)
    return random.hex().encode("ascii")


def _receive(sock: "_socket.socket", size: int, deadline: float) -> bytes:
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


def _settimeout(sock: "_socket.socket", deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Failed
    sock.settimeout(left)


def _cap_field(harness: str) -> bytes:
    """``,"max_chars":N`` when the harness trims this hook's context below its usual cap."""
    setting = _env(RESTRICTED_SETTING) if harness == "claude" else None
    if setting is None or setting.strip().lower() in _OFF:
        return b""
    return b',"max_chars":' + str(RESTRICTED_CONTEXT_CHARS).encode("ascii")


def _ask(
    out: _Output,
    broker: tuple[str, int, str],
    harness: str,
    payload: bytes,
    deadline: float,
    nonce: bytes,
) -> bool:
    """Ask the broker; print and acknowledge its answer. False when it did not answer."""
    host, port, token = broker
    key = token.encode("utf-8")
    body = b"".join((
        b'{"nonce":"', nonce, b'","harness":', _quote(harness),
        b',"node_id":', _quote(_env("ACTIVE_MEMORY_NODE")),
        b',"conversation_id":', _quote(_env("ACTIVE_MEMORY_CONVERSATION")),
        b',"execution_id":', _quote(_env("ACTIVE_MEMORY_EXECUTION")),
        _cap_field(harness), b',"payload":', payload.strip() or b"null", b"}",
    ))  # fmt: skip
    # Signed, not sent: whatever listens on the port never sees the token.
    request = hmac_sha256(key, REQUEST_CONTEXT, body) + body
    import _socket  # here: a call with no broker to ask (the store fallback's) never loads it

    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    sock = _socket.socket(family, _socket.SOCK_STREAM)
    try:
        _settimeout(sock, deadline)
        sock.connect((host.strip("[]"), port))
        sock.sendall(len(request).to_bytes(4, "big") + request)
        size = int.from_bytes(_receive(sock, 4, deadline), "big")
        if not MAC_BYTES + 2 <= size <= MAC_BYTES + MAX_RESPONSE_BYTES:
            return False
        signed = _receive(sock, size, deadline)
        tag, answer = signed[:MAC_BYTES], signed[MAC_BYTES:]
        # Only the broker the token was issued for can sign this call's nonce.
        if not _same(tag, hmac_sha256(key, ANSWER_CONTEXT, nonce, answer)):
            return False
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


def _from_store(
    out: _Output, harness: str, payload: bytes, options: dict[str, str], nonce: bytes
) -> bool:
    """Recall straight from the lesson store when no broker answers (slow path)."""
    store, workspace = options.get("store"), options.get("workspace")
    if not store or not workspace:
        return False
    # This process ends within milliseconds: collecting cycles among the thousands of objects
    # the imports and the cached index create would only cost it time.
    import gc  # built in; imported here so the broker path's module set stays the bare one

    gc.disable()
    if "active_memory" not in sys.modules:  # loaded already under the console script
        # …/active_memory/hooks/helper.py → the package's parent, with either separator: the
        # helper's own package, put first rather than searched for along the whole path (the
        # installed command runs under -S, where no search would find it).
        here = __file__.replace("\\", "/").rsplit("/", 3)[0]
        sys.path.insert(0, here)
    from active_memory.hooks.fallback import answer_from_store

    document = _decode(payload.decode("utf-8"))  # strictly, as broker answers are read
    # The broker's nonce names the call: a late broker and this answer share one receipt.
    answer = answer_from_store(harness, document, store=store, workspace=workspace,
                               call_id=nonce.decode("ascii"))  # fmt: skip
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
        if _env(SPECIALIST_SESSION_VARIABLE) not in _OFF_OR_UNSET:
            raise _Failed
        payload = _read_stdin(deadline)
        if len(payload) > MAX_REQUEST_BYTES:
            raise _Failed
        broker = _broker(options)
        fallback = bool(options.get("store") and options.get("workspace"))
        asking = deadline - FALLBACK_RESERVE_S if fallback else deadline
        nonce = _nonce()
        answered = broker is not None and _ask(out, broker, harness, payload, asking, nonce)
        if not answered and fallback and time.monotonic() < deadline:
            _from_store(out, harness, payload, options, nonce)
    except BaseException:  # a hook must never fail the tool call it informs
        pass
    try:  # noqa: SIM105
        out.print(EMPTY)
    except BaseException:
        pass
    return 0


def run() -> None:
    """:func:`main` as the installed command runs it: once the answer is flushed, the process
    ends at once (``posix._exit``), skipping the interpreter's teardown (its cost: see the
    module's note). Nothing is lost: the answer is flushed, the socket closed, and every file a
    call writes is written and closed before it returns."""
    code = main()
    posix = _posix()
    if posix is not None:
        posix._exit(code)
    sys.exit(code)  # no posix module (Windows): the usual exit


if __name__ == "__main__":
    run()
