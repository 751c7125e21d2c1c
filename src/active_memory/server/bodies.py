"""What a request sends, read within the service's limits and its token's rates.

A body is read up to ``max_request_bytes`` within ``request_timeout_s``; a larger one is read on
and dropped up to twice the limit, so a client still sending reads the 413 rather than a reset
connection, and a ``Content-Length`` over twice the limit is refused before reading. A request
that has arrived whole (``protocol.REQUEST_ARRIVED``) has its body taken at once.
"""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect, Request

from active_memory.server.credentials import Credential
from active_memory.server.fairness import TokenRates, retry_after
from active_memory.server.limits import ServiceLimits
from active_memory.server.protocol import REQUEST_ARRIVED
from active_memory.server.refusals import Refusal

__all__ = ["PARSE_IN_LOOP_BYTES", "Bodies"]

PARSE_IN_LOOP_BYTES = 64 * 1024  # larger bodies are validated on a worker thread


class Bodies:
    """The reading of request bodies, under ``limits`` and each token's ``rates``."""

    def __init__(self, limits: ServiceLimits, rates: TokenRates) -> None:
        self.limits = limits
        self.rates = rates

    def arrived_whole(self, request: Request) -> bool:
        """Whether the request, head and a body of at most ``PARSE_IN_LOOP_BYTES`` announced by
        ``Content-Length``, is already in the protocol's buffer (``protocol.REQUEST_ARRIVED``):
        its body is then taken without waiting for anything, nor reading anything more."""
        arrived = request.scope.get("extensions", {}).get(REQUEST_ARRIVED)
        declared = request.headers.get("content-length", "")
        return (
            arrived is not None
            and declared.isascii()
            and declared.isdigit()
            and int(declared) <= PARSE_IN_LOOP_BYTES
            and arrived()
        )

    def declared_length(self, request: Request) -> int | None:
        declared = request.headers.get("content-length")
        if declared is None:
            return None
        if "transfer-encoding" in request.headers:
            # The body would be read by its chunks (RFC 9112), whatever its length: charged by
            # the Content-Length, a token would send any body past its byte rate. llhttp refuses
            # such a request before the application sees it; this holds if it ever does not.
            raise Refusal(
                "bad_request",
                "the request names both Content-Length and Transfer-Encoding; send one",
            )
        if not (declared.isascii() and declared.isdigit()):
            raise Refusal("bad_request", f"Content-Length {declared!r} is not a byte count")
        return int(declared)

    def too_large(self) -> Refusal:
        limit = self.limits.max_request_bytes
        return Refusal("too_large", f"the request body exceeds {limit} bytes; send less")

    def admit(self, request: Request, who: Credential) -> None:
        """The token's rates: 429 before anything is read when it is over either."""
        declared = self.declared_length(request) or 0
        if declared > 2 * self.limits.max_request_bytes:
            raise self.too_large()  # not worth reading: answered at once, the upload cut short
        # A body over the limit is read only to be dropped: it is charged as the largest body.
        wait_s = self.rates.admit_request(who.id, min(declared, self.limits.max_request_bytes))
        if wait_s:
            raise Refusal(
                "rate_limited",
                f"this token is over its request or byte rate; retry in {retry_after(wait_s)} s",
                wait_s=wait_s,
            )

    async def raw(self, request: Request) -> bytes:
        limit = self.limits.max_request_bytes
        declared = self.declared_length(request)
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.limits.request_timeout_s):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > 2 * limit:
                        break
                    if size <= limit:
                        chunks.append(chunk)
        except TimeoutError:
            raise Refusal("timeout", "the request body did not arrive in time") from None
        except ClientDisconnect:
            raise Refusal("bad_request", "the client went away before the body arrived") from None
        who: Credential | None = getattr(request.state, "credential", None)
        if declared is None and who is not None:
            self.rates.charge_bytes(who.id, size)
        if size > limit:
            # A body up to twice the limit is read (and dropped) before the refusal, so the
            # client, still sending, reads the 413 instead of a reset connection.
            raise self.too_large()
        return b"".join(chunks)

    async def taken(self, request: Request) -> bytes:
        """The body of a request that arrived whole (:meth:`arrived_whole`)."""
        try:
            return b"".join([chunk async for chunk in request.stream()])
        except ClientDisconnect:
            raise Refusal("bad_request", "the client went away before the body arrived") from None
