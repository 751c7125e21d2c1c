"""A runtime JSON file is read through the bounded reader: any bytes load or are one ConfigError."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from active_memory.errors import ConfigError
from active_memory.models.config import load_runtime_config
from hostile import hostile_bytes, planted

pytestmark = pytest.mark.timeout(300)
VALID = {"activeMemory": {"repository": True, "nodeInjectionTokens": 1200},
         "globalAgents": {"postmortem": {"enabled": True, "timeoutMs": 60000}}}  # fmt: skip


@settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.one_of(planted(VALID), hostile_bytes()))
def test_fuzz_a_runtime_file_loads_or_is_one_config_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "runtime.json"
    path.write_bytes(data)
    refusal = None
    try:
        load_runtime_config(path)
    except ConfigError as error:
        refusal = str(error)
    if refusal is not None:
        assert "\n" not in refusal


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_runtime_fifo_is_a_config_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "runtime.json"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"is a FIFO \(named pipe\), not a regular file"):
        load_runtime_config(fifo)


def test_a_runtime_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "runtime.json"
    path.write_bytes(b'{"activeMemory": {"repository": "\xff"}}')
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 33 on line 1"):
        load_runtime_config(path)
