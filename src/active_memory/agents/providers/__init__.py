"""Model providers: one small async interface, one module per SDK.

The adapters (``anthropic``, ``openai``) are not imported here: their SDKs load only when a
binding asks for them through :func:`create_provider`. Everything :mod:`.base` exports (the
interface and its frozen types) is exported here too, as its ``__all__`` lists it.
"""

from __future__ import annotations

from active_memory.agents.providers import base
from active_memory.agents.providers.base import *  # noqa: F403
from active_memory.agents.providers.connections import Connection
from active_memory.agents.providers.registry import (
    ProviderContext,
    ProviderFactory,
    close_provider,
    create_provider,
    provider_names,
    register_provider,
)
from active_memory.agents.providers.retry import RetryPolicy

__all__ = [
    *base.__all__,
    "Connection",
    "ProviderContext",
    "ProviderFactory",
    "RetryPolicy",
    "close_provider",
    "create_provider",
    "provider_names",
    "register_provider",
]
