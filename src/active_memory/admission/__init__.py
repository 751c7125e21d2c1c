"""Specialist JSON contracts and host admission.

Each specialist answers in one strict JSON Schema (Draft 2020-12), a file of the package's
``contracts/`` folder read through :mod:`active_memory.data_folders` (or an author's copy): every
object closes ``additionalProperties`` and requires every property (optional values are
nullable), and only keywords inside the subset that OpenAI strict structured output and
Anthropic tool input schemas both accept are used. Lengths, counts and patterns are therefore
not in the schemas; the host enforces them in :mod:`active_memory.admission.validate`.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from active_memory.data_folders import read_file
from active_memory.errors import ConfigError
from active_memory.roles import ROLES

__all__ = ["CONTRACTS", "contract_sha256", "load_contract", "wire_schema"]

# The card's contract, then each specialist role's (active_memory.roles), by name.
CONTRACTS: tuple[str, ...] = ("card", *sorted(ROLES))


def _check_name(name: str) -> str:
    if name not in CONTRACTS:
        raise KeyError(f"no contract {name!r}; known contracts: {', '.join(CONTRACTS)}")
    return name


def _raw(name: str) -> bytes:
    return read_file("contracts", f"{_check_name(name)}.schema.json")


def load_contract(name: str) -> dict[str, Any]:
    """The contract ``name`` as a fresh dict (callers may mutate their copy)."""
    try:
        loaded = json.loads(_raw(name))
    except ValueError as error:
        raise ConfigError(f"contract {name!r}", f"is not JSON ({error})") from error
    if not isinstance(loaded, dict):
        raise ConfigError(f"contract {name!r}", "must be a JSON object")
    return loaded


def contract_sha256(name: str) -> str:
    """sha256 hex of the contract file's bytes, to bind recorded answers to a contract version."""
    return hashlib.sha256(_raw(name)).hexdigest()


def wire_schema(name: str) -> dict[str, Any]:
    """The contract as sent to a provider: the ``$schema`` dialect marker removed.

    Providers document the keyword subset they accept, not the meta keywords; dropping the
    marker keeps the request inside what they document while the file stays self-describing.
    """
    schema = copy.deepcopy(load_contract(name))
    schema.pop("$schema", None)
    return schema
