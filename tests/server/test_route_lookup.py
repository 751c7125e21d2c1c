"""The service's routes found by one lookup (``server/dispatch.py``); everything else answered
by Starlette's router as before."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from active_memory.server.dispatch import DirectRoutes


async def _answer(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"method": request.method, "size": len(body)})


def _app() -> tuple[DirectRoutes, list[str]]:
    app = DirectRoutes(
        [
            Route("/v1/generation", _answer, methods=["GET"]),
            Route("/v1/publish", _answer, methods=["POST"]),
            Route("/v1/items/{name}", _answer, methods=["GET"]),
        ]
    )
    routed: list[str] = []
    starlette = app.starlette

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":  # the test client's lifespan messages go here too
            routed.append(f"{scope['method']} {scope['path']}")
        await starlette(scope, receive, send)

    app.starlette = counted  # type: ignore[assignment]
    return app, routed


def test_a_request_naming_a_route_reaches_its_endpoint_without_the_router() -> None:
    app, routed = _app()
    with TestClient(app) as client:
        assert client.post("/v1/publish", content=b"abc").json() == {"method": "POST", "size": 3}
        assert client.get("/v1/generation").json() == {"method": "GET", "size": 0}
        head = client.head("/v1/generation")  # Starlette's Route takes HEAD with GET
        assert (head.status_code, head.content) == (200, b"")
    assert routed == []


def test_anything_else_is_answered_by_starlettes_router_as_before() -> None:
    app, routed = _app()
    with TestClient(app) as client:
        assert client.get("/v1/nowhere").status_code == 404
        assert client.get("/v1/publish").status_code == 405  # a method the route does not take
        slash = client.post("/v1/publish/", follow_redirects=False)
        assert (slash.status_code, slash.headers["location"]) == (
            307,
            "http://testserver/v1/publish",
        )
        assert client.get("/v1/items/a").json() == {"method": "GET", "size": 0}
    assert routed == [
        "GET /v1/nowhere",
        "GET /v1/publish",
        "POST /v1/publish/",
        "GET /v1/items/a",
    ]
