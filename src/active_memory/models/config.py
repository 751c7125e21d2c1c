"""The runtime JSON sections active-memory reads: ``activeMemory`` and ``globalAgents``.

Both live in the host's runtime JSON beside keys that are not ours (harness, provider, nodes…),
which are ignored. Inside our sections every key is checked: an unknown key is an error that
lists the allowed ones, so a typo never silently disables memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from active_memory.errors import ConfigError

__all__ = [
    "ActiveMemoryConfig",
    "PostmortemConfig",
    "RuntimeConfig",
    "load_runtime_config",
    "parse_runtime_config",
]

TOKEN_RANGE = (1, 64_000)
TIMEOUT_MS_RANGE = (1, 600_000)
BYTES_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class ActiveMemoryConfig:
    repository: bool = True
    graph: bool = True
    node_injection_tokens: int = 16_000
    hook_injection_tokens: int = 8_000

    @property
    def node_injection_bytes(self) -> int:
        return self.node_injection_tokens * BYTES_PER_TOKEN

    @property
    def hook_injection_bytes(self) -> int:
        return self.hook_injection_tokens * BYTES_PER_TOKEN

    @property
    def enabled(self) -> bool:
        return self.repository or self.graph


@dataclass(frozen=True, slots=True)
class PostmortemConfig:
    enabled: bool = True
    source_node: str | None = None
    timeout_ms: int = 600_000


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    active_memory: ActiveMemoryConfig = field(default_factory=ActiveMemoryConfig)
    postmortem: PostmortemConfig = field(default_factory=PostmortemConfig)


_ACTIVE_MEMORY_KEYS = ("repository", "graph", "nodeInjectionTokens", "hookInjectionTokens")
_GLOBAL_AGENTS_KEYS = ("postmortem",)
_POSTMORTEM_KEYS = ("enabled", "sourceNode", "timeoutMs")


def _section(data: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}", f"must be a JSON object, got {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "an array", dict: "an object"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def _reject_unknown(section: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    unknown = sorted(set(section) - set(allowed))
    if unknown:
        raise ConfigError(
            where, f"unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}"
        )


def _bool(section: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key}", f"must be true or false, got {_json_type(value)}")
    return value


def _int_in(section: Mapping[str, Any], key: str, default: int, bounds: tuple[int, int],
            where: str) -> int:  # fmt: skip
    value = section.get(key, default)
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}.{key}", f"must be an integer from {low} to {high}")
    if not low <= value <= high:
        raise ConfigError(f"{where}.{key}", f"is {value}; it must be from {low} to {high}")
    return value


def parse_runtime_config(runtime: Mapping[str, Any]) -> RuntimeConfig:
    """Read our two sections from a host's runtime JSON object; absent sections get defaults."""
    if not isinstance(runtime, Mapping):
        raise ConfigError("runtime", f"must be a JSON object, got {_json_type(runtime)}")

    memory = _section(runtime, "activeMemory", "activeMemory")
    if "budgetBytes" in memory:
        raise ConfigError(
            "activeMemory.budgetBytes",
            "is no longer supported; remove it from your saved runtime JSON. "
            "It was replaced by nodeInjectionTokens (graph guidance per node invocation, "
            "default 16000) and hookInjectionTokens (repository recall per tool call, "
            "default 8000)",
        )
    _reject_unknown(memory, _ACTIVE_MEMORY_KEYS, "activeMemory")
    active_memory = ActiveMemoryConfig(
        repository=_bool(memory, "repository", True, "activeMemory"),
        graph=_bool(memory, "graph", True, "activeMemory"),
        node_injection_tokens=_int_in(
            memory, "nodeInjectionTokens", 16_000, TOKEN_RANGE, "activeMemory"
        ),
        hook_injection_tokens=_int_in(
            memory, "hookInjectionTokens", 8_000, TOKEN_RANGE, "activeMemory"
        ),
    )

    agents = _section(runtime, "globalAgents", "globalAgents")
    _reject_unknown(agents, _GLOBAL_AGENTS_KEYS, "globalAgents")
    pm = _section(agents, "postmortem", "globalAgents.postmortem")
    where = "globalAgents.postmortem"
    _reject_unknown(pm, _POSTMORTEM_KEYS, where)
    source_node = pm.get("sourceNode")
    if source_node is not None and (not isinstance(source_node, str) or not source_node.strip()):
        raise ConfigError(f"{where}.sourceNode", "must be a non-empty node id string")
    postmortem = PostmortemConfig(
        enabled=_bool(pm, "enabled", True, where),
        source_node=source_node,
        timeout_ms=_int_in(pm, "timeoutMs", 600_000, TIMEOUT_MS_RANGE, where),
    )
    return RuntimeConfig(active_memory=active_memory, postmortem=postmortem)


def load_runtime_config(path: str | Path) -> RuntimeConfig:
    """Read a runtime JSON file; a missing or unparsable file is a ConfigError naming it."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(file), f"cannot be read ({exc.strerror})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            str(file), f"is not valid JSON (line {exc.lineno} column {exc.colno}: {exc.msg})"
        ) from exc
    return parse_runtime_config(data)
