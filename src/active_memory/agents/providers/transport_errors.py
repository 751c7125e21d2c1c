"""What an HTTP failure was, as a toolkit error with a stable cause: the adapters' shared rules.

Each adapter's ``_map_api_errors()`` catches its SDK's exceptions and hands the facts here:

* an HTTP status (:func:`classify_status`): 401/403 ``auth_failed``, 429 ``rate_limited``,
  408 ``server_timeout``, 409 ``server_conflict``, 5xx and Anthropic's 529 ``server_error``
  (retried), any other status ``http_error`` (not retried);
* a connection that failed (:func:`connection_error`), told apart by walking the exception
  chain down to the socket: ``connection_refused`` (retried: a server may be starting),
  ``dns_failed`` and ``tls_failed`` (not retried: no wait fixes a wrong name or certificate),
  else ``connection_failed`` (retried);
* a body that is not what the API promises (:func:`malformed_response`).

Messages name the server's host (never a credential or a path) so a report says where.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from active_memory.agents.providers.retry import parse_retry_after
from active_memory.errors import ProviderError, ProviderTransientError, ProviderUnavailable

__all__ = [
    "classify_status",
    "connection_error",
    "describe_host",
    "malformed_response",
]

_MAX_CHAIN = 16


def describe_host(url: object) -> str:
    """``host[:port]`` of a URL, without user, password, path or query; ``?`` when unknown."""
    try:
        parts = urlsplit(str(url))
        host = parts.hostname
        port = parts.port
    except ValueError:
        return "?"
    if not host:
        return "?"
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port is not None else shown


_STATUS_CAUSES = {401: "auth_failed", 403: "auth_failed", 408: "server_timeout",
                  409: "server_conflict", 429: "rate_limited"}  # fmt: skip


def classify_status(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    message: str,
    *,
    credential: str,
) -> ProviderError:
    """The toolkit error for an HTTP error status; the SDKs' own retry rules, made ours.

    408, 409, 429, 5xx and Anthropic's 529 (overloaded) are transient unless the server says
    ``x-should-retry: false``; 401/403 mean the credential is wrong, named by ``credential``.
    """
    hint = headers.get("x-should-retry")
    if status in (401, 403):
        return ProviderUnavailable(
            f"{provider} refused the credential (HTTP {status}: {message}); "
            f"check the value of {credential}",
            cause="auth_failed",
        )
    cause = _STATUS_CAUSES.get(status, "server_error" if status >= 500 else "http_error")
    retryable = status in (408, 409, 429) or status >= 500
    if hint == "true" or (retryable and hint != "false"):
        return ProviderTransientError(
            provider, message, status=status, retry_after=parse_retry_after(headers), cause=cause
        )
    return ProviderError(f"{provider}: HTTP {status}: {message}", cause=cause)


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, its causes and contexts, and the members of exception groups among them."""
    seen: set[int] = set()
    todo = [error]
    while todo and len(seen) < _MAX_CHAIN:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)


def _refused(error: BaseException) -> bool:
    return isinstance(error, ConnectionRefusedError) or (
        isinstance(error, OSError) and error.errno == errno.ECONNREFUSED
    )


def connection_error(provider: str, error: BaseException, url: object) -> ProviderError:
    """The toolkit error for a request that never got an HTTP answer from ``url``."""
    host = describe_host(url)
    chain = list(_chain(error))
    for link in chain:
        if isinstance(link, ssl.SSLError):
            reason = getattr(link, "reason", None) or type(link).__name__
            return ProviderError(
                f"{provider}: the TLS handshake with {host} failed ({reason}); check the "
                "base URL's scheme and the server's certificate",
                cause="tls_failed",
            )
    for link in chain:
        if isinstance(link, socket.gaierror):
            return ProviderError(
                f"{provider}: the server name of {host} does not resolve (DNS: "
                f"{link.strerror or link}); check the base URL",
                cause="dns_failed",
            )
    if any(_refused(link) for link in chain):
        return ProviderTransientError(
            provider,
            f"connection refused by {host}; is the server running there?",
            cause="connection_refused",
        )
    detail = next((str(link) for link in reversed(chain) if str(link)), type(error).__name__)
    return ProviderTransientError(
        provider, f"connection to {host} failed: {detail}", cause="connection_failed"
    )


def malformed_response(provider: str, host: str, detail: str) -> ProviderError:
    """The server at ``host`` answered, but not with the API's shape (not JSON, fields
    missing)."""
    return ProviderError(
        f"{provider}: {host} sent a response that is not a valid API answer "
        f"({detail}); is the base URL the API's root?",
        cause="malformed_response",
    )
