"""The OpenAI provider: Chat Completions through the SDK's own clients, one per lane.

Lanes: ``openai`` (AsyncOpenAI), ``azure`` (AsyncAzureOpenAI; the binding's model is the
deployment name) and ``compatible`` (AsyncOpenAI against a base URL: vLLM, llama.cpp's server,
any OpenAI-compatible endpoint). The SDK is imported lazily; its retries are off
(``max_retries=0``) so ``retry.py`` owns them; its exceptions are translated in
:func:`_map_api_errors` only.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.openai_wire import build_params, check_effort, parse_completion
from active_memory.agents.providers.retry import RetryPolicy, call_with_retries, classify_status
from active_memory.errors import (
    ConfigError,
    ProviderError,
    ProviderTransientError,
    ProviderUnavailable,
)

if TYPE_CHECKING:
    import httpx2
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

__all__ = ["OPENAI_LANES", "OpenAIProvider"]

OPENAI_LANES = ("openai", "azure", "compatible")
# Local servers usually take no key, but the SDK insists on one; this placeholder is no secret.
UNUSED_KEY = "unused"


def _env_value(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def _openai_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AsyncOpenAI, str]:
    from openai import AsyncOpenAI

    credential = endpoint.api_key_env if endpoint and endpoint.api_key_env else "OPENAI_API_KEY"
    api_key = (endpoint.api_key if endpoint else None) or _env_value(env, "OPENAI_API_KEY")
    if api_key is None:
        raise ProviderUnavailable(f"no OpenAI API key: set {credential}")
    base_url = (endpoint.base_url if endpoint else None) or _env_value(env, "OPENAI_BASE_URL")
    client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, http_client=http_client)
    return client, credential


def _azure_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AsyncOpenAI, str]:
    from openai import AsyncAzureOpenAI

    key_var = endpoint.api_key_env if endpoint and endpoint.api_key_env else "AZURE_OPENAI_API_KEY"
    api_key = (endpoint.api_key if endpoint else None) or _env_value(env, "AZURE_OPENAI_API_KEY")
    ad_token = None if api_key else _env_value(env, "AZURE_OPENAI_AD_TOKEN")
    if api_key is None and ad_token is None:
        raise ProviderUnavailable(f"no Azure OpenAI API key: set {key_var}")
    azure_endpoint = (endpoint.base_url if endpoint else None) or _env_value(
        env, "AZURE_OPENAI_ENDPOINT"
    )
    if azure_endpoint is None:
        raise ProviderUnavailable("no Azure OpenAI endpoint: set AZURE_OPENAI_ENDPOINT")
    api_version = (endpoint.api_version if endpoint else None) or _env_value(
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
        max_retries=0,
        http_client=http_client,
    )
    return client, key_var if api_key else "AZURE_OPENAI_AD_TOKEN"


def _compatible_client(
    env: Mapping[str, str], endpoint: Endpoint | None, http_client: httpx2.AsyncClient | None
) -> tuple[AsyncOpenAI, str]:
    from openai import AsyncOpenAI

    base_url = (endpoint.base_url if endpoint else None) or _env_value(env, "OPENAI_BASE_URL")
    if base_url is None:
        where = endpoint.connection if endpoint else "the binding"
        raise ProviderUnavailable(
            f"no base URL for the OpenAI-compatible server of {where}: set OPENAI_BASE_URL "
            "or declare a connection whose <NAME>_BASE_URL is set"
        )
    credential = endpoint.api_key_env if endpoint and endpoint.api_key_env else "OPENAI_API_KEY"
    api_key = (endpoint.api_key if endpoint else None) or _env_value(env, "OPENAI_API_KEY")
    client = AsyncOpenAI(
        api_key=api_key or UNUSED_KEY, base_url=base_url, max_retries=0, http_client=http_client
    )
    return client, credential


@contextmanager
def _map_api_errors(provider: str, credential: str) -> Iterator[None]:
    """The one place OpenAI SDK exceptions become toolkit errors."""
    import openai

    try:
        yield
    except openai.APIStatusError as e:
        raise classify_status(
            provider, e.status_code, e.response.headers, e.message, credential=credential
        ) from e
    except openai.APIConnectionError as e:
        raise ProviderTransientError(provider, f"connection failed: {e.message}") from e
    except openai.OpenAIError as e:
        raise ProviderError(f"{provider}: {e}") from e


class OpenAIProvider:
    """A provider session's transport to an OpenAI-style Chat Completions endpoint.

    ``http_client`` is the seam tests use to inject an ``httpx2.AsyncClient`` with a mock
    transport; ``retry`` sets the retry policy (tests inject a sleep that does not sleep).
    """

    def __init__(
        self,
        *,
        lane: str = "openai",
        endpoint: Endpoint | None = None,
        env: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if lane not in OPENAI_LANES:
            raise ConfigError(
                "binding.lane",
                f"{lane!r} is not an OpenAI lane; use one of {', '.join(OPENAI_LANES)}",
            )
        try:
            import openai  # noqa: F401
        except ImportError as e:
            raise ProviderUnavailable(
                "the openai SDK is not installed; run pip install 'active-memory[openai]'"
            ) from e
        env = os.environ if env is None else env
        builders = {"openai": _openai_client, "azure": _azure_client}
        build = builders.get(lane, _compatible_client)
        self._client, self._credential = build(env, endpoint, http_client)
        self.lane = lane
        self.name = "openai" if lane == "openai" else f"openai/{lane}"
        self._retry = retry or RetryPolicy()

    @staticmethod
    def check_effort(effort: str | None) -> None:
        """Fail early, at resolution, on an effort this API does not know."""
        check_effort(effort)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params = build_params(request, compatible=self.lane == "compatible")

        async def call() -> ChatCompletion:
            with _map_api_errors(self.name, self._credential):
                completion: ChatCompletion = await self._client.chat.completions.create(**params)
                return completion

        completion, retries = await call_with_retries(
            call, provider=self.name, deadline=request.deadline, policy=self._retry
        )
        return parse_completion(completion, retries)

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> OpenAIProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
