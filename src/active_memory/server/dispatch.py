"""The service's ASGI application: a request that names one of its routes exactly (method and
path) goes straight to that route's endpoint; anything else goes through Starlette's router.

Every route of the service is a plain path whose endpoint takes a request and returns a whole
answer. Starlette's router tries each route's pattern in turn, and its two exception layers wrap
every call and every ``send``: about a tenth of what the service's event loop spends on a
request's HTTP handling, spent to find an endpoint that one dict lookup finds. Here it is
called as Starlette's ``Route`` calls it. Any other method or path (a trailing slash, an
unknown path, a method the route does not take) goes through Starlette, which answers 404, 405
or a redirect as before. An exception escaping an endpoint (a bug: the endpoints answer every
refusal themselves) reaches uvicorn, which logs it and answers 500, as Starlette would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["DirectRoutes"]

Endpoint = Callable[[Request], Awaitable[Response]]


class DirectRoutes:
    """An ASGI application over ``routes``: each plain route by one lookup, the rest (and
    whatever the lookup misses) by the Starlette application made of them."""

    def __init__(self, routes: Sequence[Route]) -> None:
        self.starlette = Starlette(routes=list(routes))
        self._direct: dict[tuple[str, str], Endpoint] = {}
        for route in routes:
            if route.param_convertors or route.methods is None:
                continue  # a path with parameters, or any method: left to Starlette
            for method in route.methods:
                self._direct.setdefault((method, route.path), route.endpoint)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        endpoint = None
        if scope["type"] == "http" and not scope.get("root_path"):
            endpoint = self._direct.get((scope["method"], scope["path"]))
        if endpoint is None:
            await self.starlette(scope, receive, send)
            return
        response = await endpoint(Request(scope, receive, send))
        await response(scope, receive, send)
