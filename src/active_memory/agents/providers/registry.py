"""Bindings to providers: a dict from provider name to factory.

The built-in providers are those of the lane table (:mod:`active_memory.lanes`); each one's
adapter is ``PROVIDER`` in ``agents/providers/<provider>.py``. A host may register its own.

A binding is plain data (``provider``, ``model``, ``effort``, ``lane``, ``connections``). The
factory for its provider builds the SDK client for its lane, with the endpoint and credential of
the caller's explicit connection, else the first declared connection the binding names, else the
lane's standard variables (see ``connections.py``). A connection's lane and output mode win over
the binding's. Adapter modules are imported only when their provider is asked for, so a missing
SDK only matters to bindings that use it.

A binding whose lane is a harness lane with a runner (``claude-code``, ``codex``…: the lane
table says which) runs on the harness itself (:mod:`active_memory.agents.harness_lanes`),
whatever its provider, unless a connection (the caller's, or a declared one the binding names)
says where traffic goes: then it is that provider's API, as it is for a harness lane without a
runner.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.base import ModelProvider
from active_memory.agents.providers.connections import (
    Connection,
    Endpoint,
    lane_mismatch,
    resolve_endpoint,
)
from active_memory.agents.providers.retry import RetryPolicy
from active_memory.errors import ConfigError
from active_memory.lanes import (
    API_LANE_NAMES,
    is_harness_lane,
    lane_row,
    provider_names as table_providers,
)
from active_memory.models.runs import Binding

if TYPE_CHECKING:
    import httpx2

    from active_memory.agents.providers.sdk_adapter import SdkAdapter

__all__ = [
    "ProviderContext",
    "ProviderFactory",
    "close_provider",
    "create_provider",
    "lane_provider",
    "provider_adapter",
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


_log = logging.getLogger(__name__)

ProviderFactory = Callable[[Binding, ProviderContext], ModelProvider]


def lane_provider(lane: str) -> str:
    """The built-in provider whose API ``lane`` is; ConfigError naming the lanes otherwise."""
    row = lane_row(lane)
    if row is None or row.provider is None:
        raise ConfigError("lane", f"unknown lane {lane!r}; known: {', '.join(API_LANE_NAMES)}")
    return row.provider


def _lane(binding: Binding, endpoint: Endpoint | None) -> str | None:
    # A node run through a coding harness records the harness as its lane. When the harness
    # does not serve the specialists (see create_provider), they talk to the same provider's
    # API directly, so a harness lane means the provider's default lane.
    inherited = None if is_harness_lane(binding.lane) else binding.lane
    return (endpoint.lane if endpoint else None) or inherited


def _builtin(provider: str) -> ProviderFactory:
    """The factory of a provider in the lane table: its adapter is ``PROVIDER`` in
    ``agents/providers/<provider>.py``, imported when a binding first asks for it."""

    def create(binding: Binding, context: ProviderContext) -> ModelProvider:
        adapter = provider_adapter(provider)
        adapter.check_effort(binding.effort)
        endpoint = context.endpoint(binding)
        built = adapter(
            lane=_lane(binding, endpoint) or adapter.default_lane(endpoint),
            endpoint=endpoint,
            env=context.env,
            http_client=context.http_client,
            retry=context.retry,
            output=endpoint.output if endpoint else None,
            text_calls=endpoint.text_calls if endpoint else None,
        )
        mismatch = lane_mismatch(built.lane, built.host)
        if mismatch is not None:
            # A lane aimed at a server it was not made for sends what that server may not
            # take (forced JSON, no tools, on a compatible server): said, never refused.
            _log.warning("%s", mismatch)
        return built

    return create


def provider_adapter(provider: str) -> type[SdkAdapter[Any, Any]]:
    """The adapter class of a built-in ``provider`` (``PROVIDER`` of its module)."""
    module = importlib.import_module(f"{__package__}.{provider}")
    adapter: type[SdkAdapter[Any, Any]] = module.PROVIDER
    return adapter


_REGISTRY: dict[str, ProviderFactory] = {name: _builtin(name) for name in table_providers()}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Add or replace the factory for a provider name (e.g. a host's own gateway)."""
    _REGISTRY[name] = factory


def provider_names() -> tuple[str, ...]:
    """Every registered provider: the lane table's and any a host added, sorted."""
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
    row = lane_row(binding.lane) if binding.lane is not None else None
    if row is not None and row.runner is not None:
        declared = connections or {}
        routed = connection is not None or any(
            declared[name].provider in (None, binding.provider)
            for name in binding.connections
            if name in declared
        )
        if not routed:
            from active_memory.agents.harness_lanes import harness_lane_provider

            return harness_lane_provider(binding, os.environ if env is None else env)
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
