"""Model providers: one small async interface, one module per SDK.

The adapters (``anthropic``, ``openai``) are not imported here: their SDKs load only when a
binding asks for them through :func:`create_provider`.
"""

from __future__ import annotations

from active_memory.agents.providers.base import (
    OUTPUT_MODES,
    AnswerContract,
    AssistantMessage,
    Message,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    OutputMode,
    ReasoningBlock,
    RequestLabels,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    ToolSpec,
    UserMessage,
)
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
    "OUTPUT_MODES",
    "AnswerContract",
    "AssistantMessage",
    "Connection",
    "Message",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "OutputMode",
    "ProviderContext",
    "ProviderFactory",
    "ReasoningBlock",
    "RequestLabels",
    "RetryPolicy",
    "StopReason",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "UserMessage",
    "close_provider",
    "create_provider",
    "provider_names",
    "register_provider",
]
