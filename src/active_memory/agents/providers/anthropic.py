"""The Anthropic provider: the Messages API through the SDK's own clients, one per lane.

Lanes: ``anthropic`` (AsyncAnthropic), ``bedrock`` (AsyncAnthropicBedrock) and ``vertex``
(AsyncAnthropicVertex). The shared shell (lane check, lazy SDK import, retries, close) is
:class:`~.sdk_adapter.SdkAdapter`; the SDK's exceptions are translated in
:func:`_map_api_errors` only. Credentials come from a resolved connection or the lane's standard
environment variables.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.anthropic_wire import (
    build_params,
    effort_params,
    parse_message,
)
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.sdk_adapter import (
    UNUSED_KEY,
    ClientBuilder,
    SdkAdapter,
    client_options,
    endpoint_key,
    env_value,
)
from active_memory.agents.providers.transport_errors import (
    classify_status,
    connection_error,
    malformed_response,
)
from active_memory.errors import ConfigError, ProviderError, ProviderUnavailable

if TYPE_CHECKING:
    import httpx2
    from anthropic import AsyncAnthropic
    from anthropic.lib.bedrock import AsyncAnthropicBedrock
    from anthropic.lib.vertex import AsyncAnthropicVertex
    from anthropic.types import Message

    AnyAnthropicClient = AsyncAnthropic | AsyncAnthropicBedrock | AsyncAnthropicVertex

__all__ = ["PROVIDER", "AnthropicProvider"]


def _installed(module: str) -> bool:
    """Whether an optional library can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package (``google`` for ``google.auth``)
        return False


def _direct_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AnyAnthropicClient, str]:
    from anthropic import AsyncAnthropic

    api_key, credential = endpoint_key(endpoint, env, "ANTHROPIC_API_KEY")
    own_server = endpoint is not None and endpoint.own_server
    auth_token = None if api_key or own_server else env_value(env, "ANTHROPIC_AUTH_TOKEN")
    if own_server and api_key is None:
        api_key = UNUSED_KEY  # an Anthropic-compatible local server takes any key
    if api_key is None and auth_token is None:
        raise ProviderUnavailable(f"no Anthropic API key: set {credential}")
    base_url = (endpoint.base_url if endpoint else None) or env_value(env, "ANTHROPIC_BASE_URL")
    client = AsyncAnthropic(
        api_key=api_key,
        auth_token=auth_token,
        base_url=base_url,
        **client_options(http_client),
    )
    return client, credential


def _bedrock_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AnyAnthropicClient, str]:
    from anthropic.lib.bedrock import AsyncAnthropicBedrock

    region = env_value(env, "AWS_REGION", "AWS_DEFAULT_REGION")
    if region is None:
        raise ProviderUnavailable("no AWS region for the bedrock lane: set AWS_REGION")
    base_url = (endpoint.base_url if endpoint else None) or env_value(
        env, "ANTHROPIC_BEDROCK_BASE_URL"
    )
    token = (endpoint.api_key if endpoint else None) or env_value(env, "AWS_BEARER_TOKEN_BEDROCK")
    if token is not None:
        credential = endpoint.api_key_env if endpoint else "AWS_BEARER_TOKEN_BEDROCK"
        bearer = AsyncAnthropicBedrock(
            api_key=token,
            aws_region=region,
            base_url=base_url,
            **client_options(http_client),
        )
        return bearer, credential or "AWS_BEARER_TOKEN_BEDROCK"
    # Only whether boto3 is importable matters here; the SDK imports it itself to sign.
    if not _installed("boto3"):
        raise ProviderUnavailable(
            "the bedrock lane signs requests with boto3, which is not installed; run "
            "pip install 'active-memory[bedrock]' or set AWS_BEARER_TOKEN_BEDROCK"
        )
    signed = AsyncAnthropicBedrock(
        aws_access_key=env_value(env, "AWS_ACCESS_KEY_ID"),
        aws_secret_key=env_value(env, "AWS_SECRET_ACCESS_KEY"),
        aws_session_token=env_value(env, "AWS_SESSION_TOKEN"),
        aws_profile=env_value(env, "AWS_PROFILE"),
        aws_region=region,
        base_url=base_url,
        **client_options(http_client),
    )
    return signed, "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"


def _vertex_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AnyAnthropicClient, str]:
    from anthropic import NOT_GIVEN
    from anthropic.lib.vertex import AsyncAnthropicVertex

    region = env_value(env, "CLOUD_ML_REGION")
    if region is None:
        raise ProviderUnavailable("no Google Cloud region for the vertex lane: set CLOUD_ML_REGION")
    project = env_value(env, "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT")
    token = endpoint.api_key if endpoint else None
    if token is None:
        if not _installed("google.auth"):
            raise ProviderUnavailable(
                "the vertex lane reads Application Default Credentials with google-auth, which "
                "is not installed; run pip install 'active-memory[vertex]'"
            )
    elif project is None:
        raise ProviderUnavailable(
            "no Google Cloud project for the vertex lane: set ANTHROPIC_VERTEX_PROJECT_ID"
        )
    base_url = (endpoint.base_url if endpoint else None) or env_value(
        env, "ANTHROPIC_VERTEX_BASE_URL"
    )
    client = AsyncAnthropicVertex(
        region=region,
        project_id=project if project is not None else NOT_GIVEN,
        access_token=token,
        base_url=base_url,
        **client_options(http_client),
    )
    credential = endpoint.api_key_env if endpoint and endpoint.api_key_env else None
    return client, credential or "GOOGLE_APPLICATION_CREDENTIALS"


@contextmanager
def _map_api_errors(provider: str, credential: str, host: str) -> Iterator[None]:
    """The one place Anthropic SDK exceptions become toolkit errors."""
    import anthropic

    try:
        yield
    except anthropic.APIStatusError as e:
        message = e.api_message or e.message
        raise classify_status(
            provider, e.status_code, e.response.headers, message, credential=credential
        ) from e
    except anthropic.APIResponseValidationError as e:
        raise malformed_response(provider, host, e.message) from e
    except anthropic.APIConnectionError as e:
        raise connection_error(provider, e, e.request.url) from e
    except anthropic.CredentialsError as e:
        raise ProviderUnavailable(f"{provider}: credentials could not be loaded: {e}") from e
    except anthropic.AnthropicError as e:
        raise ProviderError(f"{provider}: {e}") from e
    except ValueError as e:
        # The SDK decodes the body with json.loads: a server that is not the API sends text.
        raise malformed_response(provider, host, f"{type(e).__name__}: {e}") from e


class AnthropicProvider(SdkAdapter["AnyAnthropicClient", "Message"]):
    """A provider session's transport to Claude on one lane (see :class:`SdkAdapter`)."""

    family = "anthropic"
    title = "Anthropic"
    map_api_errors = staticmethod(_map_api_errors)

    @staticmethod
    def check_effort(effort: str | None) -> None:
        """Fail early, at resolution, on an effort this API does not know."""
        effort_params(effort)

    @classmethod
    def client_builder(cls, lane: str) -> ClientBuilder[AnyAnthropicClient]:
        if lane == "anthropic":
            return _direct_client
        if lane == "bedrock":
            return _bedrock_client
        if lane == "vertex":
            return _vertex_client
        raise ConfigError("binding.lane", f"the Anthropic adapter has no client for lane {lane!r}")

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return build_params(request, self.output)

    async def _send(self, params: dict[str, Any]) -> Message:
        message: Message = await self._client.messages.create(**params)
        return message

    def _parse(self, result: Message, request: ModelRequest, retries: int) -> ModelResponse:
        from anthropic.types import Message

        # The SDK hands back a plain string for a body that is not JSON, and a model with
        # every field None for JSON of another shape.
        if not isinstance(result, Message) or result.content is None or result.usage is None:
            shape = "text" if isinstance(result, str) else "JSON without content"
            raise malformed_response(self.name, self.host, f"got {shape}")
        return parse_message(result, request.contract.name, retries, self.output)


# What the provider registry finds here (agents/providers/registry.py).
PROVIDER = AnthropicProvider
