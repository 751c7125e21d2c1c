"""Harness lanes: a specialist session run by a coding harness's own CLI, non-interactively.

A harness lane with a ``runner`` in the lane table (:mod:`active_memory.lanes`) is served by
``agents/harness_lanes/<runner>.py``, whose ``RUNNER`` builds a
:class:`~active_memory.agents.providers.base.ModelProvider` for a binding: each turn of the
host's tool loop is one run of the harness, which investigates with its own read-only tools,
and the host validates the answer exactly as on an API lane. :mod:`.child` runs the CLI and
ends its whole process group. ``tests/test_lanes.py`` fails when a runner row has no module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from active_memory.agents.providers.base import ModelProvider
from active_memory.errors import ConfigError
from active_memory.lanes import lane_row
from active_memory.models.runs import Binding

__all__ = ["Runner", "harness_lane_provider", "runner"]

# A runner module's RUNNER: the binding and the environment the harness runs in.
Runner = Callable[..., ModelProvider]


def runner(lane: str) -> Runner | None:
    """The ``RUNNER`` of ``lane``'s module, or None when the lane has no runner."""
    row = lane_row(lane)
    if row is None or row.runner is None:
        return None
    module = importlib.import_module(f"{__package__}.{row.runner}")
    built: Runner = module.RUNNER
    return built


def harness_lane_provider(binding: Binding, env: Mapping[str, str]) -> ModelProvider:
    """The provider that runs ``binding``'s sessions on its harness lane."""
    make = runner(binding.lane or "")
    if make is None:
        raise ConfigError("binding.lane", f"{binding.lane!r} is not a harness lane with a runner")
    return make(binding, env=env)
