"""A broker ticket is read through the bounded reader: any bytes name a broker or are a
ValueError, and a FIFO in its place is refused without blocking."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from active_memory.hooks.ticket import read_ticket, write_ticket

pytestmark = pytest.mark.timeout(300)


@settings(
    max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.one_of(st.binary(max_size=10_000), st.text().map(str.encode)))
def test_fuzz_a_ticket_names_a_broker_or_is_a_value_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "ticket"
    path.write_bytes(data)
    try:
        url, token = read_ticket(path)
    except ValueError as error:
        assert "\n" not in str(error)  # noqa: PT017 (a property over any input, not one case)
        return
    assert url
    assert token


def test_a_written_ticket_reads_back(tmp_path: Path) -> None:
    path = write_ticket(tmp_path / "ticket", "http://127.0.0.1:9/", "t0k3n")
    assert read_ticket(path) == ("http://127.0.0.1:9/", "t0k3n")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_ticket_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "ticket"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"is a FIFO \(named pipe\).*; remove it"):
        read_ticket(fifo)
