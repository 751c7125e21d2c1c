"""What a failed request was: the exception chain down to the socket, told apart."""

from __future__ import annotations

import errno
import socket
import ssl

from active_memory.agents.providers.transport_errors import (
    connection_error,
    describe_host,
    malformed_response,
)
from active_memory.errors import ProviderError, ProviderTransientError


def _wrapped(cause: BaseException) -> Exception:
    """An SDK connection error whose cause chain ends in ``cause``, as httpx raises it."""
    try:
        try:
            raise cause
        except BaseException as inner:
            raise OSError("All connection attempts failed") from inner
    except OSError as outer:
        try:
            raise RuntimeError("Connection error.") from outer
        except RuntimeError as sdk:
            return sdk


def test_a_refused_connection_is_retried_and_names_the_host() -> None:
    error = connection_error("p", _wrapped(ConnectionRefusedError(111, "refused")),
                             "http://127.0.0.1:9/v1")  # fmt: skip
    assert isinstance(error, ProviderTransientError)
    assert error.cause == "connection_refused"
    assert str(error) == "p: connection refused by 127.0.0.1:9; is the server running there?"
    by_errno = connection_error("p", _wrapped(OSError(errno.ECONNREFUSED, "x")), "http://h:1")
    assert by_errno.cause == "connection_refused"


def test_dns_and_tls_failures_are_not_retried() -> None:
    dns = connection_error("p", _wrapped(socket.gaierror(-2, "Name or service not known")),
                           "https://models.internal.example/v1")  # fmt: skip
    assert type(dns) is ProviderError
    assert dns.cause == "dns_failed"
    assert "models.internal.example does not resolve" in str(dns)
    tls = connection_error("p", _wrapped(ssl.SSLCertVerificationError(1, "verify failed")),
                           "https://127.0.0.1:8443")  # fmt: skip
    assert type(tls) is ProviderError
    assert tls.cause == "tls_failed"


def test_members_of_an_exception_group_are_looked_at() -> None:
    group = ExceptionGroup("attempts", [TimeoutError(), ConnectionRefusedError(111, "no")])
    assert connection_error("p", _wrapped(group), "http://[::1]:8080").cause == (
        "connection_refused"
    )


def test_another_connection_failure_keeps_its_words() -> None:
    error = connection_error("p", _wrapped(ConnectionResetError(104, "reset by peer")), "http://h")
    assert isinstance(error, ProviderTransientError)
    assert error.cause == "connection_failed"
    assert "connection to h failed" in str(error)


def test_a_host_is_shown_without_credentials_or_path() -> None:
    assert describe_host("https://user:secret@gateway.example:8443/v1?key=x") == (
        "gateway.example:8443"
    )
    assert describe_host("http://[::1]:8080/v1") == "[::1]:8080"
    assert describe_host("not a url") == "?"


def test_a_body_that_is_not_the_api_says_so() -> None:
    error = malformed_response("p", "127.0.0.1:8080", "got text")
    assert error.cause == "malformed_response"
    assert str(error).startswith("p: 127.0.0.1:8080 sent a response that is not a valid API")
