"""Connections: named places where a provider finds its endpoint and credential.

A binding declares connection *names* (``Binding.connections``); secrets never live in the run
record. A name maps to environment variables in one documented way:

* a host may pass explicit :class:`Connection` entries (name → variable names / base URL), which
  apply to the provider they name (or to any provider when they name none);
* otherwise the name ``my-proxy`` means the variables ``MY_PROXY_API_KEY`` (the credential),
  ``MY_PROXY_BASE_URL`` (the endpoint) and, for Azure, ``MY_PROXY_API_VERSION``; such a
  connection applies only when one of them is set, so connections meant for other tools are
  skipped.

The first declared connection that applies wins; with none, each lane reads its standard
variables (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``AZURE_OPENAI_*``, AWS or GCP settings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Connection", "Endpoint", "resolve_endpoint"]


@dataclass(frozen=True, slots=True)
class Connection:
    """Where to read a credential and endpoint; holds variable names, never the secret."""

    name: str
    provider: str | None = None
    api_key_env: str | None = None
    base_url: str | None = None
    base_url_env: str | None = None
    api_version_env: str | None = None

    @classmethod
    def from_name(cls, name: str) -> Connection:
        """The conventional variables for a name: ``my-proxy`` → ``MY_PROXY_API_KEY``, …"""
        prefix = re.sub(r"[^A-Z0-9]", "_", name.upper())
        return cls(
            name=name,
            api_key_env=f"{prefix}_API_KEY",
            base_url_env=f"{prefix}_BASE_URL",
            api_version_env=f"{prefix}_API_VERSION",
        )


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A connection resolved against the environment; ``api_key`` stays in memory only."""

    connection: str
    api_key: str | None
    api_key_env: str | None
    base_url: str | None
    api_version: str | None

    def __repr__(self) -> str:
        shown = "set" if self.api_key else "unset"
        return (
            f"Endpoint(connection={self.connection!r}, api_key={shown}, "
            f"api_key_env={self.api_key_env!r}, base_url={self.base_url!r})"
        )


def _get(env: Mapping[str, str], name: str | None) -> str | None:
    if name is None:
        return None
    value = env.get(name, "").strip()
    return value or None


def resolve_endpoint(
    provider: str,
    names: Sequence[str],
    env: Mapping[str, str],
    declared: Mapping[str, Connection] | None = None,
) -> Endpoint | None:
    """The first of ``names`` that applies to ``provider``, resolved; None when none applies."""
    declared = declared or {}
    for name in names:
        explicit = declared.get(name)
        if explicit is not None and explicit.provider not in (None, provider):
            continue
        connection = explicit or Connection.from_name(name)
        api_key = _get(env, connection.api_key_env)
        base_url = connection.base_url or _get(env, connection.base_url_env)
        if explicit is None and api_key is None and base_url is None:
            continue
        return Endpoint(
            connection=name,
            api_key=api_key,
            api_key_env=connection.api_key_env,
            base_url=base_url,
            api_version=_get(env, connection.api_version_env),
        )
    return None
