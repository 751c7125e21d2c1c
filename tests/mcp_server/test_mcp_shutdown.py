"""An interrupt while a line is in flight ends the server quietly: the transport's reader then
meets the session's closed stream, which is the shutdown's echo (seen in CI as a traceback on
stderr), while any other error in the same group still surfaces."""

from __future__ import annotations

import io
import sys
from typing import Any

import anyio
import pytest

from active_memory.mcp_server import server as mcp_server


class _Stdin(io.StringIO):
    def fileno(self) -> int:
        return 0


def _serve_raising(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    def run(*args: Any, **kwargs: Any) -> None:
        raise error

    monkeypatch.setattr(mcp_server.anyio, "run", run)
    monkeypatch.setattr(sys, "stdin", _Stdin())
    mcp_server.serve_stdio(object())  # type: ignore[arg-type]


def test_a_closed_stream_at_shutdown_ends_the_server_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    echoes = BaseExceptionGroup(
        "unhandled errors in a TaskGroup", [anyio.BrokenResourceError(), KeyboardInterrupt()]
    )
    _serve_raising(monkeypatch, echoes)


def test_any_other_error_in_the_group_still_surfaces(monkeypatch: pytest.MonkeyPatch) -> None:
    mixed = ExceptionGroup("errors", [anyio.BrokenResourceError(), ValueError("a real bug")])
    with pytest.raises(ExceptionGroup) as raised:
        _serve_raising(monkeypatch, mixed)
    assert [type(e) for e in raised.value.exceptions] == [ValueError]
