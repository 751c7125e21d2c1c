"""Specialists that cannot succeed on a run are not started; the report says why.

- Repository discovery and maintenance need an inspectable checkout: a git work tree admission
  can verify citations against, present on this machine so the session's tools can read it.
  Without one every repository proposal is refused ``source:no_checkout`` and every adapt or
  retire is deferred, so a session would only spend tokens.
- Graph discovery needs a host that delivers graph lessons. A run converted from a harness
  session (Claude Code, Codex, Copilot, pi: its runtime names the ``source`` session) has a
  one-node graph that no host ever injects lessons into, so a graph lesson would never reach an
  agent. Graph maintenance still runs: it has nothing to decide unless such lessons exist.
- Discovery needs an agent node that executed in this run: a lesson is attributed to one, and
  admission refuses every lesson for a node without a model binding (``scope:node_not_agent``)
  and every reference to its executions and receipts (``*_auxiliary``). A session that never
  named its model (a legacy Codex rollout) converts to such a graph.
"""

from __future__ import annotations

from active_memory.agents.specialists import SPECS, SpecialistEnv, has_checkout_tools
from active_memory.models.runs import RunRecord
from active_memory.postmortem.report import CheckoutStatus

__all__ = ["graph_lessons_delivered", "skip_reason"]

_NO_GIT = {
    "none": "the record names no checkout",
    "not_git": "the checkout is not a git work tree",
    "uninspectable": "the checkout could not be inspected with git",
}


def graph_lessons_delivered(record: RunRecord) -> bool:
    """False for a run converted from a harness session: no host injects its node prompts."""
    runtime = record.runtime
    return not (isinstance(runtime.get("source"), str) and "session_id" in runtime)


def skip_reason(
    record: RunRecord, name: str, env: SpecialistEnv, checkout: CheckoutStatus
) -> str | None:
    """Why specialist ``name`` cannot succeed on this run, in one line; None when it can."""
    spec = SPECS[name]
    if spec.scope == "repository":
        why = _NO_GIT.get(checkout)
        if why is None and not has_checkout_tools(env):
            why = "the checkout folder is not on this machine, so no tool can read it"
        if why is not None:
            return f"not run: {why}, so repository lessons cannot be verified"
    if name == "graph_discovery" and not graph_lessons_delivered(record):
        source = record.runtime.get("source")
        return (
            f"not run: the run comes from a {source} session, where no host delivers graph "
            "lessons to a node"
        )
    if not spec.maintenance and not _an_agent_executed(record):
        return (
            "not run: no agent node (a worker or verifier with a model binding) executed in this "
            "run, so no lesson can be attributed to one"
        )
    return None


def _an_agent_executed(record: RunRecord) -> bool:
    for execution in record.executions:
        node = record.graph.node(execution.node_id)
        if not execution.imported and node is not None and node.is_agent:
            return True
    return False
