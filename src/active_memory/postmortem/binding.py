"""Which binding the specialists use: the source node's, as the caller overrides it.

Every specialist inherits the source node's exact binding (provider, model, effort, lane,
connections). A caller may override parts of it, and the CLI's ``--provider``, ``--model``,
``--lane``, ``--base-url``, ``--api-key-env`` and ``--output`` are exactly these, so a host
calling the library gets what the CLI gets:

* ``provider``: ``replay`` answers from a recording; the model, effort and lane stay the
  inherited ones, because only the answers were recorded. Another registered provider name
  starts on its own default lane (a lane such as bedrock or azure belongs to one provider); the
  inherited name keeps its lane. An unknown name is a :class:`ConfigError` naming the known ones.
* ``model``: replaces the inherited model.
* ``lane``: the API lane (``compatible``, ``bedrock``…); it names its provider, so ``--lane
  compatible`` alone means an OpenAI-compatible server. A harness lane with a runner
  (``claude-code``) runs the specialists on the harness itself, on its own login: the provider
  becomes the harness's, and no connection option goes with it.
* ``base_url``, ``api_key_env``, ``output``, ``text_calls``: where traffic goes, which
  variable holds its credential, the output mode and text-form calls; with the lane they form
  the caller's own :class:`~active_memory.agents.providers.connections.Connection`, which wins
  over the connections the runtime JSON declares (``globalAgents.postmortem.connections``).

Nothing is derived from a name in the run record: a binding's connection names only select
among declared connections (:func:`declared_connections`).

A provider handed over in-process (``provider=``) is the one that serves every session, so
when no other provider is named the binding, the report and the run log name it, not the
inherited one (:func:`provider_label`): a ReplayProvider counts as ``replay``, a
ScriptedProvider as ``scripted``, an SDK adapter as its provider (and its lane), any other
provider by its ``name`` attribute, else its class name. Providers a ``provider_factory`` makes
serve the binding they are given, which is the name the report keeps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.providers.connections import Connection
from active_memory.agents.providers.output import check_output
from active_memory.agents.providers.registry import create_provider, lane_provider, provider_names
from active_memory.agents.providers.replay import RecordingProvider, ReplayProvider
from active_memory.agents.providers.scripted import ScriptedProvider
from active_memory.agents.providers.sdk_adapter import SdkAdapter
from active_memory.agents.providers.transport_errors import describe_host
from active_memory.errors import ConfigError, PostmortemError
from active_memory.harnesses import HarnessRow, harness_row
from active_memory.lanes import lane_row
from active_memory.models.config import PostmortemConfig
from active_memory.models.runs import AuthoredGraph, Binding, GraphNode

__all__ = [
    "REPLAY",
    "BindingOverride",
    "Route",
    "declared_connections",
    "provider_for",
    "provider_label",
    "provider_route",
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
    if len(graph.nodes) == 1 and graph.nodes[0].kind == "worker":
        # A converted session that named no model: specialist_binding asks for one.
        return graph.nodes[0]
    raise PostmortemError(
        f"graph {graph.name!r} has no agent node (a worker or verifier with a binding) whose "
        "model the postmortem could inherit; add one or set globalAgents.postmortem.enabled false"
    )


@dataclass(frozen=True, slots=True)
class BindingOverride:
    """What a caller changes in the inherited binding; the empty override changes nothing."""

    provider: str | None = None
    model: str | None = None
    lane: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    output: str | None = None
    text_calls: bool | None = None

    def apply(self, binding: Binding) -> Binding:
        """``binding`` with this override's provider, lane and model; ConfigError on an
        unknown provider or lane, or a lane of another provider than the one named."""
        provider = self.provider
        if self.lane is not None and provider != REPLAY:
            harness = self._harness()
            if harness is None:
                owner = lane_provider(self.lane)
            else:
                # The harness serves its own model; the binding names its provider for reports.
                owner = harness.provider or provider or binding.provider
            if provider is not None and provider != owner:
                raise ConfigError(
                    "lane", f"{self.lane!r} is a lane of {owner!r}, not of {provider!r}"
                )
            provider = owner
        check_output(self.output)
        if provider == REPLAY:
            binding = binding.model_copy(update={"provider": REPLAY})
        elif provider is not None:
            if provider not in provider_names():
                known = ", ".join((REPLAY, *provider_names()))
                raise ConfigError("provider", f"unknown provider {provider!r}; known: {known}")
            if provider != binding.provider:
                # Lanes belong to one provider (bedrock, azure…): another provider starts anew.
                binding = binding.model_copy(update={"provider": provider, "lane": None})
        if self.lane is not None and provider != REPLAY:
            binding = binding.model_copy(update={"lane": self.lane})
        if self.model is not None:
            binding = binding.model_copy(update={"model": self.model})
        return binding

    def _harness(self) -> HarnessRow | None:
        """The harness whose lane ``lane`` is, when that lane has a runner; a connection
        option beside it is a ConfigError (the harness uses its own login)."""
        row = lane_row(self.lane) if self.lane is not None else None
        if row is None or row.runner is None or row.harness is None:
            return None
        options = {
            "--base-url": self.base_url,
            "--api-key-env": self.api_key_env,
            "--output": self.output,
            "--text-calls": self.text_calls,
        }
        given = [option for option, value in options.items() if value is not None]
        if given:
            raise ConfigError(
                "lane",
                f"--lane {self.lane} runs the specialists on the harness's own login; drop "
                f"{', '.join(given)} (they choose an API lane's server)",
            )
        return harness_row(row.harness)

    def connection(self) -> Connection | None:
        """The caller's own connection, when this override says where traffic goes (a harness
        lane's traffic is the harness's own: no connection)."""
        if self._harness() is not None:
            return None
        given = (self.lane, self.base_url, self.api_key_env, self.output, self.text_calls)
        if given == (None,) * 5:
            return None
        return Connection(
            name="override",
            provider=lane_provider(self.lane) if self.lane is not None else None,
            lane=self.lane,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            output=check_output(self.output),
            described=self._described(),
            text_calls=self.text_calls,
        )

    def _described(self) -> str:
        """The option that says where traffic goes, as messages name this connection."""
        if self.base_url is not None:
            return f"--base-url {describe_host(self.base_url)}"
        if self.lane is not None:
            return f"--lane {self.lane}"
        if self.api_key_env is not None:
            return f"--api-key-env {self.api_key_env}"
        if self.output is not None:
            return f"--output {self.output}"
        return "--text-calls" if self.text_calls else "--no-text-calls"


def declared_connections(config: PostmortemConfig) -> dict[str, Connection]:
    """The runtime JSON's connection entries, as the provider registry takes them."""
    # An entry's fields are a Connection's, by the same names; only the output mode is checked.
    return {
        name: Connection(
            name=name, **entry.model_dump(exclude={"output"}), output=check_output(entry.output)
        )
        for name, entry in config.connections.items()
    }


@dataclass(frozen=True, slots=True)
class Route:
    """Where a postmortem's model traffic went: provider, lane, server host, model."""

    provider: str
    lane: str | None
    host: str | None
    model: str


def _unwrapped(provider: ModelProvider) -> ModelProvider:
    for _ in range(_MAX_WRAPPERS):
        if not isinstance(provider, RecordingProvider):
            break
        provider = provider.inner
    return provider


def provider_route(binding: Binding, provider: ModelProvider | None) -> Route:
    """The route of ``binding`` as ``provider`` (when it was built) actually serves it: an SDK
    adapter knows its own lane and host; otherwise the binding's lane, and no host."""
    inner = _unwrapped(provider) if provider is not None else None
    if isinstance(inner, SdkAdapter):
        return Route(inner.family, inner.lane, inner.host, binding.model)
    return Route(binding.provider, binding.lane, None, binding.model)


def provider_label(provider: ModelProvider) -> tuple[str, str | None]:
    """The provider name (and lane, when the provider has one of its own) that a provider
    passed in-process is reported under; a recording provider is named by the one it wraps."""
    provider = _unwrapped(provider)
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
    inherited = node.binding
    if inherited is None:
        given = override.provider or (provider_label(provider)[0] if provider else None)
        if override.model is None or given is None:
            raise PostmortemError(
                f"node {node.id!r} names no model to inherit (its session recorded none); pass "
                "--provider and --model to choose the model the postmortem runs"
            )
        inherited = Binding(provider=given, model=override.model)
    if override.provider is not None or provider is None:
        return override.apply(inherited)
    name, lane = provider_label(provider)
    if name == REPLAY:
        return replace(override, provider=REPLAY).apply(inherited)
    binding = override.apply(inherited)
    if name == binding.provider and lane in (None, binding.lane):
        return binding
    # Only the name changes: the model, effort and lane requested stay the inherited ones,
    # unless the provider brings a lane of its own (an SDK adapter).
    update: dict[str, object] = {"provider": name}
    if lane is not None:
        update["lane"] = lane
    return binding.model_copy(update=update)


def provider_for(
    binding: Binding,
    recording: Path | None = None,
    *,
    connections: Mapping[str, Connection] | None = None,
    connection: Connection | None = None,
) -> ModelProvider:
    """The provider a binding names: a replay of ``recording``, or one from the registry with
    the declared ``connections`` and the caller's own ``connection`` (which wins).

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
    return create_provider(binding, connections=connections, connection=connection)
