"""The shell both SDK adapters share: lane check, SDK import, client, complete with retries, close.

An adapter (``anthropic.py``, ``openai.py``) subclasses :class:`SdkAdapter` and supplies only
what is its own: its lanes and install extras, how each lane's client is built from a resolved
connection or the standard environment variables, the wire conversion in its ``*_wire`` module,
and its ``_map_api_errors()``, the one place its SDK's exceptions become toolkit errors. The
SDK's own retries are off (``max_retries=0``) so :mod:`.retry` owns them, counted and bounded by
the request's deadline.
"""

from __future__ import annotations

import importlib
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypedDict, TypeVar

from active_memory.agents.providers.base import ModelRequest, ModelResponse, OutputMode
from active_memory.agents.providers.connections import Endpoint
from active_memory.agents.providers.retry import RetryPolicy, call_with_retries
from active_memory.agents.providers.text_calls import take_text_call
from active_memory.agents.providers.transport_errors import describe_host
from active_memory.errors import ConfigError, ProviderError, ProviderUnavailable
from active_memory.lanes import api_lanes, lane_row

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "UNUSED_KEY",
    "ClientBuilder",
    "ClientOptions",
    "SdkAdapter",
    "client_options",
    "endpoint_key",
    "env_value",
]

_log = logging.getLogger(__name__)

# Local servers usually take no key, but the SDKs insist on one; this placeholder is no secret.
UNUSED_KEY = "unused"


class _Closable(Protocol):
    async def close(self) -> None: ...


ClientT = TypeVar("ClientT", bound=_Closable)
ResultT = TypeVar("ResultT")
ClientBuilder = Callable[
    [Mapping[str, str], Endpoint | None, "httpx2.AsyncClient | None"], tuple[ClientT, str]
]


class ClientOptions(TypedDict):
    max_retries: int
    http_client: httpx2.AsyncClient | None


def client_options(http_client: httpx2.AsyncClient | None) -> ClientOptions:
    """The arguments every lane's SDK client takes alike: the SDK's own retries off (:mod:`.retry`
    owns them) and the test seam's HTTP client (None: the SDK's own)."""
    return {"max_retries": 0, "http_client": http_client}


def env_value(env: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set to something other than blanks, stripped."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def endpoint_key(
    endpoint: Endpoint | None, env: Mapping[str, str], standard: str
) -> tuple[str | None, str]:
    """The key for a lane whose standard variable is ``standard``, and the name a refused
    credential is reported under.

    A connection that names its key variable must have it set (ProviderUnavailable naming it
    otherwise). One with its own server and no key variable gets no key at all: the standard
    variable holds a key for the hosted API, which no other server should see.
    """
    if endpoint is None:
        return env_value(env, standard), standard
    if endpoint.api_key_env is not None:
        if endpoint.api_key is None:
            raise ProviderUnavailable(
                f"no API key for {endpoint.title}: set {endpoint.api_key_env}"
            )
        return endpoint.api_key, endpoint.api_key_env
    if endpoint.own_server:
        # A caller's own connection came from options; a declared one from runtime JSON.
        how = "--api-key-env NAME" if endpoint.described else "apiKeyEnv"
        return None, (
            f"the API key for {endpoint.title} (none is sent: name its variable with {how})"
        )
    return env_value(env, standard), standard


class SdkAdapter(ABC, Generic[ClientT, ResultT]):
    """A provider session's transport to one SDK on one lane.

    ``http_client`` is the seam tests use to inject an ``httpx2.AsyncClient`` with a mock
    transport; ``retry`` sets the retry policy (tests inject a sleep that does not sleep).
    ``output`` is how the final answer is asked for (``output.py``); each lane has a default.
    ``host`` is where traffic goes (``host[:port]`` of the client's base URL). ``text_calls``
    says whether a reply that is only a call written as JSON text is taken as that call
    (``text_calls.py``); each lane has a default.
    """

    family: ClassVar[str]  # the provider name: also its SDK's module and its default lane
    title: ClassVar[str]  # how its documentation spells it, for messages
    lanes: ClassVar[tuple[str, ...]]  # its rows of the lane table (active_memory.lanes)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.lanes = api_lanes(cls.family)

    def __init__(
        self,
        *,
        lane: str | None = None,
        endpoint: Endpoint | None = None,
        env: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        retry: RetryPolicy | None = None,
        output: OutputMode | None = None,
        text_calls: bool | None = None,
    ) -> None:
        lane = self.family if lane is None else lane
        if lane not in self.lanes:
            raise ConfigError(
                "binding.lane",
                f"{lane!r} is not an {self.title} lane; use one of {', '.join(self.lanes)}",
            )
        try:
            importlib.import_module(self.family)
        except ImportError as e:
            raise ProviderUnavailable(
                f"the {self.family} SDK is not installed; run pip install "
                f"'active-memory[{self.extra(lane)}]'"
            ) from e
        environ = os.environ if env is None else env
        build = self.client_builder(lane)
        self._client, self._credential = build(environ, endpoint, http_client)
        self.lane = lane
        self.name = self.family if lane == self.family else f"{self.family}/{lane}"
        # Where traffic goes, for reports and the run log: host[:port], never a credential.
        self.host = describe_host(getattr(self._client, "base_url", ""))
        self._retry = retry or RetryPolicy()
        self.output: OutputMode = output or self.default_output(lane)
        self.text_calls = self.default_text_calls(lane) if text_calls is None else text_calls
        self._warned_model = False

    # -- what each adapter supplies ----------------------------------------------------------

    @classmethod
    def extra(cls, lane: str) -> str:
        """The install extra that brings the SDK for ``lane`` (its lane row's)."""
        row = lane_row(lane)
        return row.extra if row is not None and row.extra is not None else cls.family

    @classmethod
    def default_lane(cls, endpoint: Endpoint | None) -> str:
        """The lane of a binding that names no API lane: the provider's own."""
        return cls.family

    @classmethod
    def default_output(cls, lane: str) -> OutputMode:
        """The output mode of ``lane`` when none is asked for: the answer as a tool."""
        return "tool"

    @classmethod
    def default_text_calls(cls, lane: str) -> bool:
        """Whether ``lane`` takes text-form calls when not told: no. Hosted APIs return calls
        as calls; reading JSON text as one there would only mistake an answer for a call."""
        return False

    @staticmethod
    @abstractmethod
    def check_effort(effort: str | None) -> None:
        """Fail early, when a binding is resolved, on an effort this API does not know."""

    @classmethod
    @abstractmethod
    def client_builder(cls, lane: str) -> ClientBuilder[ClientT]:
        """What builds ``lane``'s client (from the environment, the resolved endpoint and the
        test seam) and names the credential a 401 should tell the user to set."""

    @staticmethod
    @abstractmethod
    def map_api_errors(provider: str, credential: str, host: str) -> AbstractContextManager[None]:
        """The adapter's ``_map_api_errors()``: where its SDK's exceptions become toolkit
        errors naming ``provider``, the ``credential`` to set and the ``host``."""

    @abstractmethod
    def _params(self, request: ModelRequest) -> dict[str, Any]:
        """The SDK call's keyword arguments for ``request`` (the wire module's job)."""

    @abstractmethod
    async def _send(self, params: dict[str, Any]) -> ResultT:
        """One SDK call, inside the adapter's error mapping; retried by the shell."""

    @abstractmethod
    def _parse(self, result: ResultT, request: ModelRequest, retries: int) -> ModelResponse:
        """The toolkit's response for the SDK's result."""

    # -- the shared shell --------------------------------------------------------------------

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params = self._params(request)

        async def call() -> ResultT:
            with self.map_api_errors(self.name, self._credential, self.host):
                return await self._send(params)

        result, retries = await call_with_retries(
            call, provider=self.name, deadline=request.deadline, policy=self._retry, host=self.host
        )
        try:
            response = self._parse(result, request, retries)
        except ProviderError as error:
            error.attempts = retries + 1
            raise
        if self.text_calls:
            response = take_text_call(response, request, self.output)
        self._check_answered_model(request.model, response.model)
        return response

    def _check_answered_model(self, requested: str, answered: str) -> None:
        """Warn, once per provider, when the server says another model answered: a mistyped
        name a local server ignores is otherwise invisible. A dated snapshot of the requested
        name (``gpt-4o`` answered as ``gpt-4o-2024-08-06``) is the same model."""
        if self._warned_model or not answered or answered.startswith(requested):
            return
        self._warned_model = True
        _log.warning(
            "warning: %s at %s was asked for model %r but answered as %r; check --model (or "
            "the binding's model)",
            self.name,
            self.host,
            requested,
            answered,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
