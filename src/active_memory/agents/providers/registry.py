"""Bindings to providers: a dict from provider name to factory.

A binding is plain data (``provider``, ``model``, ``effort``, ``lane``, ``connections``). The
factory for its provider builds the SDK client for its lane, with the endpoint and credential of
the caller's explicit connection, else the first declared connection the binding names, else the
lane's standard variables (see ``connections.py``). A connection's lane and output mode win over
the binding's. Adapter modules are imported only when their provider is asked for, so a missing
SDK only matters to bindings that use it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.providers.connections import Connection, Endpoint, resolve_endpoint
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.errors import ConfigError
from active_memory.models.runs import Binding

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "LANES",
    "ProviderContext",
    "ProviderFactory",
    "close_provider",
    "create_provider",
    "lane_provider",
    "provider_names",
    "register_provider",
]


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What a factory may use besides the binding: the declared ``connections``, the caller's
    explicit ``connection`` (which wins), the environment; ``http_client`` is the test seam."""

    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    connections: Mapping[str, Connection] = field(default_factory=dict)
    http_client: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    connection: Connection | None = None

    def endpoint(self, binding: Binding) -> Endpoint | None:
        return resolve_endpoint(
            binding.provider,
            binding.connections,
            self.env,
            self.connections,
            explicit=self.connection,
        )


ProviderFactory = Callable[[Binding, ProviderContext], ModelProvider]

# A node run through a coding harness records the harness as its lane. The specialists talk to
# the same provider's API directly, so a harness lane means the provider's default API lane.
HARNESS_LANES = frozenset({"claude-code", "codex", "copilot", "pi"})
# The API lanes of the built-in providers; a lane names its provider.
LANES: Mapping[str, tuple[str, ...]] = {
    "anthropic": ("anthropic", "bedrock", "vertex"),
    "openai": ("openai", "azure", "compatible"),
}


def lane_provider(lane: str) -> str:
    """The built-in provider whose API ``lane`` is; ConfigError naming the lanes otherwise."""
    for provider, lanes in LANES.items():
        if lane in lanes:
            return provider
    known = ", ".join(lane for lanes in LANES.values() for lane in lanes)
    raise ConfigError("lane", f"unknown lane {lane!r}; known: {known}")


def _api_lane(lane: str | None) -> str | None:
    return None if lane in HARNESS_LANES else lane


def _lane(binding: Binding, endpoint: Endpoint | None) -> str | None:
    return (endpoint.lane if endpoint else None) or _api_lane(binding.lane)


def _anthropic(binding: Binding, context: ProviderContext) -> ModelProvider:
    from active_memory.agents.providers.anthropic import AnthropicProvider

    AnthropicProvider.check_effort(binding.effort)
    endpoint = context.endpoint(binding)
    return AnthropicProvider(
        lane=_lane(binding, endpoint) or "anthropic",
        endpoint=endpoint,
        env=context.env,
        http_client=context.http_client,
        retry=context.retry,
        output=endpoint.output if endpoint else None,
    )


def _openai(binding: Binding, context: ProviderContext) -> ModelProvider:
    from active_memory.agents.providers.openai import OpenAIProvider

    OpenAIProvider.check_effort(binding.effort)
    endpoint = context.endpoint(binding)
    lane = _lane(binding, endpoint)
    if lane is None:
        # A connection that names its own server is a compatible endpoint, not api.openai.com.
        lane = "compatible" if endpoint is not None and endpoint.own_server else "openai"
    return OpenAIProvider(
        lane=lane,
        endpoint=endpoint,
        env=context.env,
        http_client=context.http_client,
        retry=context.retry,
        output=endpoint.output if endpoint else None,
    )


_REGISTRY: dict[str, ProviderFactory] = {"anthropic": _anthropic, "openai": _openai}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Add or replace the factory for a provider name (e.g. a host's own gateway)."""
    _REGISTRY[name] = factory


def provider_names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def create_provider(
    binding: Binding,
    *,
    env: Mapping[str, str] | None = None,
    connections: Mapping[str, Connection] | None = None,
    http_client: httpx2.AsyncClient | None = None,
    retry: RetryPolicy | None = None,
    connection: Connection | None = None,
) -> ModelProvider:
    """The provider for a binding; unknown names, lanes or efforts fail here, before any call.

    ``connection`` is the caller's own endpoint (the CLI's ``--base-url``...), which wins over
    the ``connections`` declared for the binding's connection names.
    """
    factory = _REGISTRY.get(binding.provider)
    if factory is None:
        raise ConfigError(
            "binding.provider",
            f"unknown provider {binding.provider!r}; known: {', '.join(provider_names())}",
        )
    context = ProviderContext(
        env=os.environ if env is None else env,
        connections=connections or {},
        http_client=http_client,
        retry=retry or RetryPolicy(),
        connection=connection,
    )
    return factory(binding, context)


async def close_provider(provider: ModelProvider) -> None:
    """Release a provider's HTTP pool when it has one (the interface itself has no close)."""
    close = getattr(provider, "aclose", None)
    if close is not None:
        await close()
