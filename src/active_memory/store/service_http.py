"""The HTTP exchanges of :class:`~active_memory.store.remote.RemoteBackend` with the service.

One request, one whole answer: :meth:`Exchange.send` returns the status and the body read up to
the bound, or raises one of three errors that say how far it got, which is what the backend
needs to word its own (a publication whose request left may have committed):

* :class:`Unreached`: no connection, so nothing was sent;
* :class:`AnswerLost`: the request was sent, or partly sent, and no whole answer came back;
* :class:`AnswerTooLarge`: the answer is over the bound (nothing of it is kept).

:class:`Http11` is the way a host talks to the service: the standard library's ``http.client``
over kept-alive connections. A writer's CPU counts against the team's throughput (8 writers,
the service and PostgreSQL share the cores), and httpx's own request and answer models, header
checks and the h11 state machine cost about 0.4 ms of it a request, three times the whole of
``http.client``'s exchange. :class:`HttpxExchange` keeps httpx where its work is needed: a
proxy from the environment (``HTTPS_PROXY``, ``ALL_PROXY``...), and a test's transport.

Both send no cookie and follow no redirect; a timeout bounds connecting and each read and write.
"""

from __future__ import annotations

import http.client
import os
import select
import socket
import ssl
from http.cookiejar import CookieJar
from typing import TYPE_CHECKING, Protocol
from urllib.parse import SplitResult, quote, urlsplit
from urllib.request import getproxies

if TYPE_CHECKING:
    import httpx

__all__ = [
    "AnswerLost",
    "AnswerTooLarge",
    "Exchange",
    "Http11",
    "HttpxExchange",
    "Unreached",
    "open_exchange",
]

_CHUNK = 256 * 1024
_IDLE_KEPT = 20  # connections kept alive at most, as httpx's default pool keeps


class _Failed(Exception):
    """A failed exchange: ``kind`` names the error underneath, ``str()`` is its message."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error) or error.__class__.__name__)
        self.kind = error.__class__.__name__


class Unreached(_Failed):
    """No connection to the service (refused, timed out, TLS refused): nothing was sent."""


class AnswerLost(_Failed):
    """The request was sent (or partly sent) and no whole answer came back."""


class AnswerTooLarge(Exception):
    """The answer is longer than the bound; nothing of it was kept."""


class Exchange(Protocol):
    def send(self, method: str, path: str, content: bytes | None) -> tuple[int, bytes]:
        """Send ``method path`` (relative to ``/v1``) with ``content`` as its JSON body."""
        ...

    def close(self) -> None: ...


def open_exchange(
    url: str,
    prefix: str,
    headers: dict[str, str],
    *,
    timeout_s: float,
    max_response_bytes: int,
    context: ssl.SSLContext | None,
    transport: httpx.BaseTransport | None,
) -> Exchange:
    """The exchange with the service at ``url`` (checked): :class:`HttpxExchange` for a test's
    ``transport`` or a proxy the environment names, else :class:`Http11`. ``context`` is the
    TLS context of a ``ca_file``; None trusts what httpx trusts."""
    if transport is not None or _proxied():
        verify: ssl.SSLContext | bool = True if context is None else context
        return HttpxExchange(url + prefix, headers, timeout_s=timeout_s,
                             max_response_bytes=max_response_bytes, verify=verify,
                             transport=transport)  # fmt: skip
    parts = urlsplit(url)
    if parts.scheme == "https" and context is None:
        context = _default_context()
    return Http11(parts, prefix, headers, timeout_s=timeout_s,
                  max_response_bytes=max_response_bytes, context=context)  # fmt: skip


def _proxied() -> bool:
    """Whether the environment names a proxy (``urllib``'s reading of it, which httpx uses):
    then the exchange goes through httpx, which honours it (and ``NO_PROXY``)."""
    found = getproxies()
    return any(found.get(scheme) for scheme in ("http", "https", "all"))


def _default_context() -> ssl.SSLContext:
    """The certificate authorities httpx trusts (``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else
    certifi's, which httpx installs), so a host trusts the service as it did through httpx."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class Http11:
    """HTTP/1.1 through ``http.client``: kept-alive connections, one request at a time on each
    (a connection is taken from the idle list for a request and put back after it, so threads
    sharing a backend each get their own)."""

    def __init__(
        self,
        parts: SplitResult,
        prefix: str,
        headers: dict[str, str],
        *,
        timeout_s: float,
        max_response_bytes: int,
        context: ssl.SSLContext | None,
    ) -> None:
        assert parts.hostname is not None  # check_service_url refused a URL without one
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._context = context if parts.scheme == "https" else None
        if self._context is not None:
            self._context.set_alpn_protocols(["http/1.1"])  # as httpcore offers it
        # As httpx sends it: the URL's path percent-encoded where it has to be.
        self._prefix = quote(parts.path.rstrip("/") + prefix, safe="/%!$&'()*+,;=:@-._~")
        self._headers = headers
        self._posted = {**headers, "content-type": "application/json"}
        self._timeout = timeout_s
        self._max = max_response_bytes
        self._idle: list[_Plain | _Tls] = []
        self._closed = False

    def send(self, method: str, path: str, content: bytes | None) -> tuple[int, bytes]:
        connection = self._connection()
        headers = self._headers if content is None else self._posted
        connection.body_follows = content is not None
        try:
            connection.request(method, self._prefix + path, body=content, headers=headers)
            answer = connection.getresponse()
            status, raw = answer.status, self._read(answer)
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise AnswerLost(error) from None
        except BaseException:  # over the bound (the rest is on its way), or interrupted
            connection.close()
            raise
        if connection.sock is not None and len(self._idle) < _IDLE_KEPT:
            self._idle.append(connection)  # http.client drops the socket of a "close" answer
            if self._closed:  # closed while this request ran: nothing is kept after it
                self._drop_idle()
        else:
            connection.close()
        return status, raw

    def close(self) -> None:
        self._closed = True
        self._drop_idle()

    def _drop_idle(self) -> None:
        while True:
            try:
                connection = self._idle.pop()  # atomic, as a request's own take is
            except IndexError:
                return
            connection.close()

    def _connection(self) -> _Plain | _Tls:
        if self._closed:  # as httpx refuses a closed client's requests
            raise RuntimeError("the connection to the memory service was closed")
        while True:
            try:
                kept = self._idle.pop()  # atomic: another thread may have taken the last one
            except IndexError:
                break
            if _still_open(kept):
                return kept
            kept.close()
        connection: _Plain | _Tls
        if self._context is None:
            connection = _Plain(self._host, self._port, timeout=self._timeout)
        else:
            connection = _Tls(self._host, self._port, timeout=self._timeout, context=self._context)
        try:
            connection.connect()
        except OSError as error:  # refused, unreachable, timed out, TLS refused (ssl.SSLError)
            connection.close()
            raise Unreached(error) from None
        return connection

    def _read(self, answer: http.client.HTTPResponse) -> bytes:
        if answer.length is not None:  # a Content-Length: refused before reading any of it
            if answer.length > self._max:
                raise AnswerTooLarge
            return answer.read()
        chunks: list[bytes] = []
        size = 0
        while chunk := answer.read(_CHUNK):
            size += len(chunk)
            if size > self._max:
                raise AnswerTooLarge
            chunks.append(chunk)
        return b"".join(chunks)


class _OneWrite(http.client.HTTPConnection):
    """A connection that sends a request's head and body in one write, with Nagle's algorithm
    off (as httpcore sets it). ``http.client`` writes the head, then the body: two segments,
    and the service's event loop woken for each (its CPU is the team's too), or the body held
    back by Nagle until the head is acknowledged."""

    body_follows = False  # set for a request with a body: its head is held until the body
    _head: bytes | None = None

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, data: object) -> None:
        if self._head is not None and isinstance(data, bytes):
            data, self._head = self._head + data, None
        elif self.body_follows and isinstance(data, bytes):
            self._head, self.body_follows = data, False
            return
        super().send(data)  # type: ignore[arg-type]  # http.client's ReadableBuffer


class _Plain(_OneWrite):
    pass


class _Tls(_OneWrite, http.client.HTTPSConnection):
    pass


def _still_open(connection: http.client.HTTPConnection) -> bool:
    """Whether a kept-alive connection can carry the next request: a socket readable while no
    request is out means the service closed it (its keep-alive ran out) or sent what nobody
    asked for. Checked before sending, as httpcore does, so a publication is never sent on a
    connection already closed and then reported with an unknown outcome."""
    sock = connection.sock
    if sock is None:
        return False
    try:
        if _poll is None:  # no poll() (Windows): select(), whose descriptors stop at 1023
            readable, _, _ = select.select([sock], [], [], 0)
            return not readable
        # poll(), not select(): a host holding a thousand files would otherwise find every
        # kept connection unusable, and open a new one (a TLS handshake) for each request.
        polled = _poll()
        polled.register(sock, select.POLLIN)
        return not polled.poll(0)
    except (OSError, ValueError):  # closed meanwhile
        return False


_poll = getattr(select, "poll", None)


class _NoCookies(CookieJar):
    """The token is the client's one credential: a cookie set by the service, or by a proxy on
    the way, is neither kept nor sent back. Nor is it parsed: the standard library's cookie
    handling ran on every answer (a tenth of a millisecond of the client's CPU each)."""

    def extract_cookies(self, response: object, request: object) -> None:
        return None

    def add_cookie_header(self, request: object) -> None:
        return None


class HttpxExchange:
    """The exchange through an ``httpx.Client``: for a proxy the environment names (httpx reads
    ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY``), or a test's transport."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        *,
        timeout_s: float,
        max_response_bytes: int,
        verify: ssl.SSLContext | bool,
        transport: httpx.BaseTransport | None,
    ) -> None:
        import httpx

        self._httpx = httpx
        self._max = max_response_bytes
        self._client = httpx.Client(
            base_url=base_url,
            verify=verify,
            headers=headers,
            cookies=_NoCookies(),
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            transport=transport,
        )

    def send(self, method: str, path: str, content: bytes | None) -> tuple[int, bytes]:
        headers = None if content is None else {"content-type": "application/json"}
        try:
            with self._client.stream(method, path, content=content, headers=headers) as response:
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > self._max:
                        raise AnswerTooLarge
                    chunks.append(chunk)
                return response.status_code, b"".join(chunks)
        except self._httpx.ConnectError as error:
            raise Unreached(error) from None
        except self._httpx.HTTPError as error:
            raise AnswerLost(error) from None

    def close(self) -> None:
        self._client.close()
