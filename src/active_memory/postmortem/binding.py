"""Which binding the specialists use: the source node's, as the caller overrides it.

Every specialist inherits the source node's exact binding (provider, model, effort, lane,
connections). A caller may override two parts of it, and the CLI's ``--provider`` and
``--model`` are exactly these, so a host calling the library gets what the CLI gets:

* ``provider``: ``replay`` answers from a recording; the model, effort and lane stay the
  inherited ones, because only the answers were recorded. Another registered provider name
  starts on its own default lane (a lane such as bedrock or azure belongs to one provider); the
  inherited name keeps its lane. An unknown name is a :class:`ConfigError` naming the known ones.
* ``model``: replaces the inherited model.

A provider handed over in-process (``provider=``) is the one that serves every session, so
when no other provider is named the binding, the report and the run log name it, not the
inherited one (:func:`provider_label`): a ReplayProvider counts as ``replay``, a
ScriptedProvider as ``scripted``, an SDK adapter as its provider (and its lane), any other
provider by its ``name`` attribute, else its class name. Providers a ``provider_factory`` makes
serve the binding they are given, which is the name the report keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.providers.registry import create_provider, provider_names
from active_memory.agents.providers.replay import RecordingProvider, ReplayProvider
from active_memory.agents.providers.scripted import ScriptedProvider
from active_memory.agents.providers.sdk_adapter import SdkAdapter
from active_memory.errors import ConfigError, PostmortemError
from active_memory.models.runs import AuthoredGraph, Binding, GraphNode

__all__ = [
    "REPLAY",
    "BindingOverride",
    "provider_for",
    "provider_label",
    "resolve_source_node",
    "specialist_binding",
]

REPLAY = "replay"
SCRIPTED = "scripted"
# A name a report and the run log may carry: short, one word, no control characters.
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$")
_MAX_WRAPPERS = 8


def resolve_source_node(graph: AuthoredGraph, source_node: str | None) -> GraphNode:
    """The agent node whose binding the specialists inherit.

    ``source_node`` must name an agent node (a worker or verifier with a binding); without it,
    the first worker in graph order, then the first agent verifier.
    """
    agents = [node.id for node in graph.nodes if node.is_agent]
    listed = ", ".join(repr(name) for name in agents) or "none"
    if source_node is not None:
        node = graph.node(source_node)
        if node is None:
            raise PostmortemError(
                f"globalAgents.postmortem.sourceNode {source_node!r} is not a node of graph "
                f"{graph.name!r}; name one of its agent nodes: {listed}"
            )
        if not node.is_agent:
            raise PostmortemError(
                f"globalAgents.postmortem.sourceNode {source_node!r} is a {node.kind!r} node "
                f"without an agent binding; name a worker or verifier instead: {listed}"
            )
        return node
    for kind in ("worker", "verifier"):
        for node in graph.nodes:
            if node.is_agent and node.kind == kind:
                return node
    raise PostmortemError(
        f"graph {graph.name!r} has no agent node (a worker or verifier with a binding) whose "
        "model the postmortem could inherit; add one or set globalAgents.postmortem.enabled false"
    )


@dataclass(frozen=True, slots=True)
class BindingOverride:
    """What a caller changes in the inherited binding; the empty override changes nothing."""

    provider: str | None = None
    model: str | None = None

    def apply(self, binding: Binding) -> Binding:
        """``binding`` with this override's provider and model; ConfigError on an unknown
        provider, before any work."""
        if self.provider == REPLAY:
            binding = binding.model_copy(update={"provider": REPLAY})
        elif self.provider is not None:
            if self.provider not in provider_names():
                known = ", ".join((REPLAY, *provider_names()))
                raise ConfigError("provider", f"unknown provider {self.provider!r}; known: {known}")
            if self.provider != binding.provider:
                # Lanes belong to one provider (bedrock, azure…): another provider starts anew.
                binding = binding.model_copy(update={"provider": self.provider, "lane": None})
        if self.model is not None:
            binding = binding.model_copy(update={"model": self.model})
        return binding


def provider_label(provider: ModelProvider) -> tuple[str, str | None]:
    """The provider name (and lane, when the provider has one of its own) that a provider
    passed in-process is reported under; a recording provider is named by the one it wraps."""
    for _ in range(_MAX_WRAPPERS):
        if not isinstance(provider, RecordingProvider):
            break
        provider = provider.inner
    if isinstance(provider, ReplayProvider):
        return REPLAY, None
    if isinstance(provider, ScriptedProvider):
        return SCRIPTED, None
    if isinstance(provider, SdkAdapter):
        return provider.family, provider.lane
    name = getattr(provider, "name", None)
    if isinstance(name, str) and _LABEL.match(name):
        return name, None
    return type(provider).__name__, None


def specialist_binding(
    node: GraphNode, override: BindingOverride, provider: ModelProvider | None = None
) -> Binding:
    """The binding the specialists of ``node`` run with: the node's own, overridden, and named
    after ``provider`` (passed in-process) when the override names no provider."""
    if node.binding is None:
        raise PostmortemError(f"node {node.id!r} has no agent binding to inherit")
    if override.provider is not None or provider is None:
        return override.apply(node.binding)
    name, lane = provider_label(provider)
    if name == REPLAY:
        return replace(override, provider=REPLAY).apply(node.binding)
    binding = override.apply(node.binding)
    if name == binding.provider and lane in (None, binding.lane):
        return binding
    # Only the name changes: the model, effort and lane requested stay the inherited ones,
    # unless the provider brings a lane of its own (an SDK adapter).
    update: dict[str, object] = {"provider": name}
    if lane is not None:
        update["lane"] = lane
    return binding.model_copy(update=update)


def provider_for(binding: Binding, recording: Path | None = None) -> ModelProvider:
    """The provider a binding names: a replay of ``recording``, or one from the registry.

    Raises what the registry raises for an unknown lane or effort or a missing credential
    (:class:`ConfigError`, :class:`~active_memory.errors.ProviderUnavailable`), and ConfigError
    for a replay without a recording.
    """
    if binding.provider == REPLAY:
        if recording is None:
            raise ConfigError(
                "provider", "replay answers from a recording; pass a ReplayProvider or its file"
            )
        return ReplayProvider(recording)
    return create_provider(binding)
