"""The Anthropic provider: the Messages API through the SDK's own clients, one per lane.

Lanes: ``anthropic`` (AsyncAnthropic), ``bedrock`` (AsyncAnthropicBedrock) and ``vertex``
(AsyncAnthropicVertex). The SDK is imported lazily; its retries are off (``max_retries=0``) so
``retry.py`` owns them; its exceptions are translated in :func:`_map_api_errors` only.
Credentials come from a resolved connection or the lane's standard environment variables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from active_memory.agents.providers.anthropic_wire import (
    build_params,
    effort_params,
    parse_message,
)
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.retry import RetryPolicy, call_with_retries, classify_status
from active_memory.errors import (
    ConfigError,
    ProviderError,
    ProviderTransientError,
    ProviderUnavailable,
)

if TYPE_CHECKING:
    import httpx2
    from anthropic import AsyncAnthropic
    from anthropic.lib.bedrock import AsyncAnthropicBedrock
    from anthropic.lib.vertex import AsyncAnthropicVertex
    from anthropic.types import Message

    AnyAnthropicClient = AsyncAnthropic | AsyncAnthropicBedrock | AsyncAnthropicVertex

__all__ = ["ANTHROPIC_LANES", "AnthropicProvider"]

ANTHROPIC_LANES = ("anthropic", "bedrock", "vertex")
_EXTRAS = {"anthropic": "anthropic", "bedrock": "bedrock", "vertex": "vertex"}


def _env_value(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _import_sdk(lane: str) -> None:
    try:
        import anthropic  # noqa: F401
    except ImportError as e:
        raise ProviderUnavailable(
            f"the anthropic SDK is not installed; run pip install 'active-memory[{_EXTRAS[lane]}]'"
        ) from e


def _direct_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AnyAnthropicClient, str]:
    from anthropic import AsyncAnthropic

    credential = endpoint.api_key_env if endpoint and endpoint.api_key_env else "ANTHROPIC_API_KEY"
    api_key = (endpoint.api_key if endpoint else None) or _env_value(env, "ANTHROPIC_API_KEY")
    auth_token = None if api_key else _env_value(env, "ANTHROPIC_AUTH_TOKEN")
    if api_key is None and auth_token is None:
        raise ProviderUnavailable(f"no Anthropic API key: set {credential}")
    base_url = (endpoint.base_url if endpoint else None) or _env_value(env, "ANTHROPIC_BASE_URL")
    client = AsyncAnthropic(
        api_key=api_key,
        auth_token=auth_token,
        base_url=base_url,
        max_retries=0,
        http_client=http_client,
    )
    return client, credential


def _bedrock_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AnyAnthropicClient, str]:
    from anthropic.lib.bedrock import AsyncAnthropicBedrock

    region = _env_value(env, "AWS_REGION", "AWS_DEFAULT_REGION")
    if region is None:
        raise ProviderUnavailable("no AWS region for the bedrock lane: set AWS_REGION")
    base_url = (endpoint.base_url if endpoint else None) or _env_value(
        env, "ANTHROPIC_BEDROCK_BASE_URL"
    )
    token = (endpoint.api_key if endpoint else None) or _env_value(env, "AWS_BEARER_TOKEN_BEDROCK")
    if token is not None:
        credential = endpoint.api_key_env if endpoint else "AWS_BEARER_TOKEN_BEDROCK"
        bearer = AsyncAnthropicBedrock(
            api_key=token,
            aws_region=region,
            base_url=base_url,
            max_retries=0,
            http_client=http_client,
        )
        return bearer, credential or "AWS_BEARER_TOKEN_BEDROCK"
    try:
        import boto3  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError as e:
        raise ProviderUnavailable(
            "the bedrock lane signs requests with boto3, which is not installed; run "
            "pip install 'active-memory[bedrock]' or set AWS_BEARER_TOKEN_BEDROCK"
        ) from e
    signed = AsyncAnthropicBedrock(
        aws_access_key=_env_value(env, "AWS_ACCESS_KEY_ID"),
        aws_secret_key=_env_value(env, "AWS_SECRET_ACCESS_KEY"),
        aws_session_token=_env_value(env, "AWS_SESSION_TOKEN"),
        aws_profile=_env_value(env, "AWS_PROFILE"),
        aws_region=region,
        base_url=base_url,
        max_retries=0,
        http_client=http_client,
    )
    return signed, "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"


def _vertex_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AnyAnthropicClient, str]:
    from anthropic import NOT_GIVEN
    from anthropic.lib.vertex import AsyncAnthropicVertex

    region = _env_value(env, "CLOUD_ML_REGION")
    if region is None:
        raise ProviderUnavailable("no Google Cloud region for the vertex lane: set CLOUD_ML_REGION")
    project = _env_value(env, "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT")
    token = endpoint.api_key if endpoint else None
    if token is None:
        try:
            import google.auth  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
        except ImportError as e:
            raise ProviderUnavailable(
                "the vertex lane reads Application Default Credentials with google-auth, which "
                "is not installed; run pip install 'active-memory[vertex]'"
            ) from e
    elif project is None:
        raise ProviderUnavailable(
            "no Google Cloud project for the vertex lane: set ANTHROPIC_VERTEX_PROJECT_ID"
        )
    base_url = (endpoint.base_url if endpoint else None) or _env_value(
        env, "ANTHROPIC_VERTEX_BASE_URL"
    )
    client = AsyncAnthropicVertex(
        region=region,
        project_id=project if project is not None else NOT_GIVEN,
        access_token=token,
        base_url=base_url,
        max_retries=0,
        http_client=http_client,
    )
    credential = endpoint.api_key_env if endpoint and endpoint.api_key_env else None
    return client, credential or "GOOGLE_APPLICATION_CREDENTIALS"


@contextmanager
def _map_api_errors(provider: str, credential: str) -> Iterator[None]:
    """The one place Anthropic SDK exceptions become toolkit errors."""
    import anthropic

    try:
        yield
    except anthropic.APIStatusError as e:
        message = e.api_message or e.message
        raise classify_status(
            provider, e.status_code, e.response.headers, message, credential=credential
        ) from e
    except anthropic.APIConnectionError as e:
        raise ProviderTransientError(provider, f"connection failed: {e.message}") from e
    except anthropic.CredentialsError as e:
        raise ProviderUnavailable(f"{provider}: credentials could not be loaded: {e}") from e
    except anthropic.AnthropicError as e:
        raise ProviderError(f"{provider}: {e}") from e


class AnthropicProvider:
    """A provider session's transport to Claude on one lane.

    ``http_client`` is the seam tests use to inject an ``httpx2.AsyncClient`` with a mock
    transport; ``retry`` sets the retry policy (tests inject a sleep that does not sleep).
    """

    def __init__(
        self,
        *,
        lane: str = "anthropic",
        endpoint: Endpoint | None = None,
        env: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if lane not in ANTHROPIC_LANES:
            raise ConfigError(
                "binding.lane",
                f"{lane!r} is not an Anthropic lane; use one of {', '.join(ANTHROPIC_LANES)}",
            )
        _import_sdk(lane)
        env = os.environ if env is None else env
        builders = {"anthropic": _direct_client, "bedrock": _bedrock_client}
        build = builders.get(lane, _vertex_client)
        self._client, self._credential = build(env, endpoint, http_client)
        self.lane = lane
        self.name = "anthropic" if lane == "anthropic" else f"anthropic/{lane}"
        self._retry = retry or RetryPolicy()

    @staticmethod
    def check_effort(effort: str | None) -> None:
        """Fail early, at resolution, on an effort this API does not know."""
        effort_params(effort)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params = build_params(request)

        async def call() -> Message:
            with _map_api_errors(self.name, self._credential):
                message: Message = await self._client.messages.create(**params)
                return message

        message, retries = await call_with_retries(
            call, provider=self.name, deadline=request.deadline, policy=self._retry
        )
        return parse_message(message, request.contract.name, retries)

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> AnthropicProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
