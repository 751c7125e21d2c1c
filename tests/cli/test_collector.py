"""The collector pause a large command runs under: paused inside, resumed however it ends."""

from __future__ import annotations

import gc

import pytest

from active_memory.cli.collector import collector_paused


def test_the_collector_is_paused_inside_and_resumes_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_resumes_when_the_block_fails() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the command failed")
    assert gc.isenabled()


def test_a_collector_paused_before_stays_paused() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
