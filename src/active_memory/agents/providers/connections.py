"""Connections: explicit places where a provider finds its endpoint and credential.

Where traffic goes and which credential it carries are chosen explicitly, never derived from a
name inside a run record:

* the caller's own connection (the CLI's ``--lane``, ``--base-url`` and ``--api-key-env``, a
  host's ``connection=``) wins;
* otherwise a binding's connection *names* select among the connections declared by the host
  (``connections=`` in-process, or the runtime JSON's ``globalAgents.postmortem.connections``
  entries); a declared connection applies to the provider it names (or any, when it names none).
  A name nobody declared is ignored: ``github`` in a record never makes ``GITHUB_BASE_URL`` or
  ``GITHUB_API_KEY`` redirect the specialists;
* with none, each lane reads its standard variables (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``,
  ``AZURE_OPENAI_*``, AWS or GCP settings).

A connection holds variable *names*, never a secret; an endpoint with its own base URL carries
only the credential its connection names (none at all when it names none), so a key meant for a
hosted API is never sent to another server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from active_memory.agents.providers.base import OutputMode

__all__ = ["Connection", "Endpoint", "lane_mismatch", "resolve_connection", "resolve_endpoint"]

# Lanes that are one hosted API: the domain their traffic belongs to, and the lane that fits a
# server elsewhere. (The anthropic lane is also how Anthropic-compatible servers are reached,
# and azure and the cloud lanes have customer-named hosts: none of them is listed.)
_HOSTED_LANES: dict[str, tuple[str, str]] = {"openai": ("api.openai.com", "compatible")}


@dataclass(frozen=True, slots=True)
class Connection:
    """Where to send a provider's traffic and which variable holds its credential.

    ``lane`` and ``output`` (an output mode, see ``output.py``) override the binding's lane and
    the lane's default mode when this connection is the one used; ``text_calls`` likewise
    turns text-form tool calls on or off (``text_calls.py``). ``described`` is how
    messages name it when the user did not name it (``--base-url 127.0.0.1:8080``: the option
    that made it); otherwise it is ``connection 'name'``.
    """

    name: str
    provider: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    base_url_env: str | None = None
    api_version_env: str | None = None
    lane: str | None = None
    output: OutputMode | None = None
    described: str | None = None
    text_calls: bool | None = None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A connection resolved against the environment; ``api_key`` stays in memory only."""

    connection: str
    api_key: str | None
    api_key_env: str | None
    base_url: str | None
    api_version: str | None
    lane: str | None = None
    output: OutputMode | None = None
    described: str | None = None
    text_calls: bool | None = None

    @property
    def title(self) -> str:
        """How a message names this endpoint's connection: as the user gave it."""
        return self.described or f"connection {self.connection!r}"

    def __repr__(self) -> str:
        shown = "set" if self.api_key else "unset"
        return (
            f"Endpoint(connection={self.connection!r}, api_key={shown}, "
            f"api_key_env={self.api_key_env!r}, base_url={self.base_url!r}, lane={self.lane!r})"
        )

    @property
    def own_server(self) -> bool:
        """True when the endpoint names its own server: only its own credential goes there."""
        return self.base_url is not None


def lane_mismatch(lane: str, host: str) -> str | None:
    """One warning line when ``lane`` is a hosted API's but ``host`` (``host[:port]``, as
    adapters describe where traffic goes) is not that API's: the lane that fits, named."""
    hosted = _HOSTED_LANES.get(lane)
    if hosted is None or host == "?":
        return None
    domain, fits = hosted
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    if name.lower() == domain or name.lower().endswith("." + domain.split(".", 1)[1]):
        return None
    return (
        f"warning: the {lane} lane is for {domain}, but its base URL points at {host}; for "
        f"another server use the {fits} lane (--lane {fits})"
    )


def _get(env: Mapping[str, str], name: str | None) -> str | None:
    if name is None:
        return None
    value = env.get(name, "").strip()
    return value or None


def resolve_connection(connection: Connection, env: Mapping[str, str]) -> Endpoint:
    """``connection`` with its variables read from ``env``."""
    return Endpoint(
        connection=connection.name,
        api_key=_get(env, connection.api_key_env),
        api_key_env=connection.api_key_env,
        base_url=connection.base_url or _get(env, connection.base_url_env),
        api_version=_get(env, connection.api_version_env),
        lane=connection.lane,
        output=connection.output,
        described=connection.described,
        text_calls=connection.text_calls,
    )


def resolve_endpoint(
    provider: str,
    names: Sequence[str],
    env: Mapping[str, str],
    declared: Mapping[str, Connection] | None = None,
    *,
    explicit: Connection | None = None,
) -> Endpoint | None:
    """The first of ``names`` declared for ``provider``, with the caller's ``explicit``
    connection over it, resolved; None when neither applies (the lane's standard variables).

    An explicit connection with its own base URL stands alone (a declared key never follows
    traffic to another server); one without refines the declared connection it finds (its
    lane, output mode, text-form calls or key variable win).
    """
    found: Connection | None = None
    for name in names:
        connection = (declared or {}).get(name)
        if connection is not None and connection.provider in (None, provider):
            found = connection
            break
    if explicit is not None:
        if found is None or explicit.base_url is not None or explicit.base_url_env is not None:
            found = explicit
        else:
            given = {
                key: getattr(explicit, key)
                for key in ("api_key_env", "api_version_env", "lane", "output", "text_calls")
                if getattr(explicit, key) is not None
            }
            found = replace(found, **given)
    return resolve_connection(found, env) if found is not None else None
