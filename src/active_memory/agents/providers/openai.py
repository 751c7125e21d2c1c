"""The OpenAI provider: Chat Completions through the SDK's own clients, one per lane.

Lanes: ``openai`` (AsyncOpenAI), ``azure`` (AsyncAzureOpenAI; the binding's model is the
deployment name) and ``compatible`` (AsyncOpenAI against a base URL: vLLM, llama.cpp's server,
any OpenAI-compatible endpoint; there a reply that is only a tool call written as JSON text is
taken as that call, see ``text_calls.py``). The shared shell (lane check, lazy SDK import,
retries, text-form calls, close) is :class:`~.sdk_adapter.SdkAdapter`; the SDK's exceptions are
translated in :func:`_map_api_errors` only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from active_memory.agents.providers.base import ModelRequest, ModelResponse, OutputMode
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.openai_wire import build_params, check_effort, parse_completion
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
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

__all__ = ["PROVIDER", "OpenAIProvider"]


def _openai_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AsyncOpenAI, str]:
    from openai import AsyncOpenAI

    api_key, credential = endpoint_key(endpoint, env, "OPENAI_API_KEY")
    own_server = endpoint is not None and endpoint.own_server
    if api_key is None and not own_server:
        raise ProviderUnavailable(f"no OpenAI API key: set {credential}")
    base_url = (endpoint.base_url if endpoint else None) or env_value(env, "OPENAI_BASE_URL")
    client = AsyncOpenAI(
        api_key=api_key or UNUSED_KEY, base_url=base_url, **client_options(http_client)
    )
    return client, credential


def _azure_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AsyncOpenAI, str]:
    from openai import AsyncAzureOpenAI

    key_var = endpoint.api_key_env if endpoint and endpoint.api_key_env else "AZURE_OPENAI_API_KEY"
    api_key = (endpoint.api_key if endpoint else None) or env_value(env, "AZURE_OPENAI_API_KEY")
    ad_token = None if api_key else env_value(env, "AZURE_OPENAI_AD_TOKEN")
    if api_key is None and ad_token is None:
        raise ProviderUnavailable(f"no Azure OpenAI API key: set {key_var}")
    azure_endpoint = (endpoint.base_url if endpoint else None) or env_value(
        env, "AZURE_OPENAI_ENDPOINT"
    )
    if azure_endpoint is None:
        raise ProviderUnavailable("no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT")
    api_version = (endpoint.api_version if endpoint else None) or env_value(
        env, "OPENAI_API_VERSION"
    )
    if api_version is None:
        raise ProviderUnavailable(
            "no Azure OpenAI API version: set OPENAI_API_VERSION (e.g. 2024-10-21 or later)"
        )
    client = AsyncAzureOpenAI(
        api_key=api_key,
        azure_ad_token=ad_token,
        azure_endpoint=azure_endpoint,
        api_version=api_version,
        **client_options(http_client),
    )
    return client, key_var if api_key else "AZURE_OPENAI_AD_TOKEN"


def _compatible_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AsyncOpenAI, str]:
    from openai import AsyncOpenAI

    # Without a server of the connection's own, OPENAI_BASE_URL and OPENAI_API_KEY go
    # together, as the SDK reads them.
    api_key, credential = endpoint_key(endpoint, env, "OPENAI_API_KEY")
    base_url = (endpoint.base_url if endpoint else None) or env_value(env, "OPENAI_BASE_URL")
    if base_url is None:
        raise ProviderUnavailable(
            "no base URL for the OpenAI-compatible server: pass --base-url, declare a "
            "connection with a baseUrl, or set OPENAI_BASE_URL"
        )
    client = AsyncOpenAI(
        api_key=api_key or UNUSED_KEY, base_url=base_url, **client_options(http_client)
    )
    return client, credential


@contextmanager
def _map_api_errors(provider: str, credential: str, host: str) -> Iterator[None]:
    """The one place OpenAI SDK exceptions become toolkit errors."""
    import openai

    try:
        yield
    except openai.APIStatusError as e:
        # The SDK's message is "Error code: 401 - {...}"; the server's own words read better.
        body = e.body
        said = body.get("message") if isinstance(body, dict) else None
        message = said if isinstance(said, str) and said else e.message
        raise classify_status(
            provider, e.status_code, e.response.headers, message, credential=credential
        ) from e
    except openai.APIResponseValidationError as e:
        raise malformed_response(provider, host, e.message) from e
    except openai.APIConnectionError as e:
        raise connection_error(provider, e, e.request.url) from e
    except ValueError as e:
        # The SDK decodes the body with json.loads: a server that is not the API sends text.
        raise malformed_response(provider, host, f"{type(e).__name__}: {e}") from e
    except openai.OpenAIError as e:
        raise ProviderError(f"{provider}: {e}") from e


class OpenAIProvider(SdkAdapter["AsyncOpenAI", "ChatCompletion"]):
    """A provider session's transport to an OpenAI-style Chat Completions endpoint (see
    :class:`SdkAdapter`)."""

    family = "openai"
    title = "OpenAI"
    map_api_errors = staticmethod(_map_api_errors)

    @staticmethod
    def check_effort(effort: str | None) -> None:
        """Fail early, at resolution, on an effort this API does not know."""
        check_effort(effort)

    @classmethod
    def client_builder(cls, lane: str) -> ClientBuilder[AsyncOpenAI]:
        if lane == "openai":
            return _openai_client
        if lane == "azure":
            return _azure_client
        if lane == "compatible":
            return _compatible_client
        raise ConfigError("binding.lane", f"the OpenAI adapter has no client for lane {lane!r}")

    @classmethod
    def default_lane(cls, endpoint: Endpoint | None) -> str:
        """A connection that names its own server is a compatible endpoint, not api.openai.com."""
        return "compatible" if endpoint is not None and endpoint.own_server else "openai"

    @classmethod
    def default_output(cls, lane: str) -> OutputMode:
        """OpenAI and Azure document strict structured output beside tools; a compatible
        server gets the answer as a tool, since its grammar-constrained JSON shuts tools out."""
        return "tool" if lane == "compatible" else "native"

    @classmethod
    def default_text_calls(cls, lane: str) -> bool:
        """On a compatible server small models write their calls as text the server does not
        parse; OpenAI and Azure return every call as a call."""
        return lane == "compatible"

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return build_params(request, compatible=self.lane == "compatible", output=self.output)

    async def _send(self, params: dict[str, Any]) -> ChatCompletion:
        completion: ChatCompletion = await self._client.chat.completions.create(**params)
        return completion

    def _parse(self, result: ChatCompletion, request: ModelRequest, retries: int) -> ModelResponse:
        from openai.types.chat import ChatCompletion

        # The SDK hands back a plain string for a body that is not JSON, and a model with
        # every field None for JSON of another shape.
        if not isinstance(result, ChatCompletion) or result.choices is None:
            shape = "text" if isinstance(result, str) else "JSON without choices"
            raise malformed_response(self.name, self.host, f"got {shape}")
        return parse_completion(result, retries, request.contract.name, self.output)


# What the provider registry finds here (agents/providers/registry.py).
PROVIDER = OpenAIProvider
