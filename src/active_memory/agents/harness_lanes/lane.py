"""What every harness lane's provider shares: made once per binding, it checks the harness's CLI
then, keeps the environment the CLI runs in, and remembers each specialist's harness session for
the repair turn that resumes it.

A lane module subclasses :class:`HarnessLane` with its ``HARNESS`` row and its ``CLI`` and
writes :meth:`~HarnessLane.complete`: the command line of a turn, then the checks of what the
session did (:meth:`~.harness_cli.HarnessCli.refuse`) and its answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from active_memory.agents.harness_lanes.harness_cli import HarnessCli, child_env
from active_memory.harnesses import HarnessRow
from active_memory.models.runs import Binding

__all__ = ["HarnessLane"]


class HarnessLane:
    """A :class:`~active_memory.agents.providers.base.ModelProvider` whose every turn is a run of
    the harness's ``cli``: the first turn of a session starts a harness session, a later turn
    (the repair) resumes the one remembered in ``_sessions`` under
    :func:`~.harness_cli.session_key`."""

    harness: ClassVar[HarnessRow]
    cli: ClassVar[HarnessCli]

    def __init__(self, binding: Binding, *, env: Mapping[str, str]) -> None:
        # Reports name the provider serving the model and the lane it went through.
        self.name = self.harness.provider or self.cli.lane
        self.lane = self.cli.lane
        self.executable = self.cli.ready(binding.effort, env)
        self._env = self.environment(env, binding.effort)
        self._sessions: dict[str, str] = {}

    def environment(self, env: Mapping[str, str], effort: str | None) -> dict[str, str]:
        """The environment the CLI runs in (see :func:`~.harness_cli.child_env`); a lane
        whose harness reads more of it, or whose ``effort`` is set there, says so here."""
        return child_env(env)
