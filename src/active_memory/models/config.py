"""The runtime JSON sections active-memory reads: ``activeMemory`` and ``globalAgents``.

Both live in the host's runtime JSON beside keys that are not ours (harness, provider, nodes…),
which are ignored. Inside our sections every key is checked: an unknown key is an error that
lists the allowed ones, so a typo never silently disables memory. The sections use the runtime
JSON's camelCase keys (``nodeInjectionTokens``); the models' attributes are snake_case. Every
refusal is a :class:`~active_memory.errors.ConfigError` naming the key and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from active_memory.bounded_input import read_json
from active_memory.errors import ConfigError, InputRefused
from active_memory.models.fields import json_type
from active_memory.models.problems import FamilyModel, family_problem, problem_at

__all__ = [
    "ActiveMemoryConfig",
    "ConnectionConfig",
    "PostmortemConfig",
    "RuntimeConfig",
    "load_runtime_config",
    "parse_runtime_config",
]

# A host's whole runtime JSON (our two sections and its own keys) is a few kilobytes.
MAX_RUNTIME_BYTES = 4 * 1024 * 1024
TOKEN_RANGE = (1, 64_000)
TIMEOUT_MS_RANGE = (1, 600_000)
# Output tokens one specialist turn may ask for: the most any supported model writes.
OUTPUT_TOKEN_RANGE = (256, 128_000)
BYTES_PER_TOKEN = 4
# Validation context of a host's runtime JSON: only the camelCase keys are keys there.
_RUNTIME_JSON = "runtime JSON"


def _switch(value: object) -> object:
    if not isinstance(value, bool):
        raise PydanticCustomError("switch", f"must be true or false, got {json_type(value)}")
    return value


def _integer_from(low: int, high: int) -> Callable[[object], object]:
    def check(value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            problem = f"must be an integer from {low} to {high}"
        elif not low <= value <= high:
            problem = f"is {value}; it must be from {low} to {high}"
        else:
            return value
        raise PydanticCustomError("integer_range", problem)

    return check


def _node_id(value: object) -> object:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise PydanticCustomError("node_id", "must be a non-empty node id string")
    return value


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_OUTPUT_MODES = ("tool", "native", "prompted")


def _pattern(pattern: re.Pattern[str], what: str) -> Callable[[object], object]:
    def check(value: object) -> object:
        if value is not None and (not isinstance(value, str) or not pattern.match(value)):
            raise PydanticCustomError("pattern", f"must be {what}")
        return value

    return check


def _base_url(value: object) -> object:
    if value is None:
        return value
    if not isinstance(value, str) or len(value) > 2048:
        raise PydanticCustomError("base_url", "must be an http(s) URL of at most 2048 characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PydanticCustomError("base_url", "must be an http(s) URL with a host")
    if parts.username or parts.password:
        raise PydanticCustomError(
            "base_url", "must not carry credentials; name the key variable in apiKeyEnv"
        )
    return value


def _output(value: object) -> object:
    if value is not None and value not in _OUTPUT_MODES:
        raise PydanticCustomError("output", f"must be one of {', '.join(_OUTPUT_MODES)}")
    return value


Switch = Annotated[bool, BeforeValidator(_switch)]
Tokens = Annotated[int, BeforeValidator(_integer_from(*TOKEN_RANGE))]
TimeoutMs = Annotated[int, BeforeValidator(_integer_from(*TIMEOUT_MS_RANGE))]
OutputTokens = Annotated[int, BeforeValidator(_integer_from(*OUTPUT_TOKEN_RANGE))]
ReasoningTokens = Annotated[int, BeforeValidator(_integer_from(0, OUTPUT_TOKEN_RANGE[1]))]
NodeId = Annotated[str | None, BeforeValidator(_node_id)]


class _Section(FamilyModel):
    """One JSON object of the runtime: absent or null means defaults; unknown keys are refused
    with the list of allowed ones; a retired key is refused with what replaced it."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    validation_error = ConfigError
    retired_keys: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: object, info: ValidationInfo) -> object:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise PydanticCustomError("section", f"must be a JSON object, got {json_type(data)}")
        for key, replacement in cls.retired_keys.items():
            if key in data:
                raise problem_at((key,), "retired_key", replacement)
        keys = [str(field.validation_alias or name) for name, field in cls.model_fields.items()]
        allowed = set(keys) if info.context == _RUNTIME_JSON else {*keys, *cls.model_fields}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise PydanticCustomError(
                "unknown_keys",
                f"unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(keys)}",
            )
        return dict(data)


class ActiveMemoryConfig(_Section):
    """``activeMemory``: which lesson scopes are on and how much each injection may carry."""

    retired_keys: ClassVar[Mapping[str, str]] = {
        "budgetBytes": "is no longer supported; remove it from your saved runtime JSON. "
        "It was replaced by nodeInjectionTokens (graph guidance per node invocation, "
        "default 16000) and hookInjectionTokens (repository recall per tool call, "
        "default 8000)"
    }

    repository: Switch = True
    graph: Switch = True
    node_injection_tokens: Tokens = Field(16_000, validation_alias="nodeInjectionTokens")
    hook_injection_tokens: Tokens = Field(8_000, validation_alias="hookInjectionTokens")

    @property
    def node_injection_bytes(self) -> int:
        return self.node_injection_tokens * BYTES_PER_TOKEN

    @property
    def hook_injection_bytes(self) -> int:
        return self.hook_injection_tokens * BYTES_PER_TOKEN

    @property
    def enabled(self) -> bool:
        return self.repository or self.graph


class ConnectionConfig(_Section):
    """One entry of ``globalAgents.postmortem.connections``: where a binding that names it
    sends its traffic and which variable holds the credential (never the secret itself)."""

    provider: Annotated[str | None, BeforeValidator(_pattern(_NAME, "a provider name"))] = None
    lane: Annotated[str | None, BeforeValidator(_pattern(_NAME, "a lane name"))] = None
    base_url: Annotated[str | None, BeforeValidator(_base_url)] = Field(
        None, validation_alias="baseUrl"
    )
    api_key_env: Annotated[
        str | None, BeforeValidator(_pattern(_ENV_NAME, "an environment variable name"))
    ] = Field(None, validation_alias="apiKeyEnv")
    api_version_env: Annotated[
        str | None, BeforeValidator(_pattern(_ENV_NAME, "an environment variable name"))
    ] = Field(None, validation_alias="apiVersionEnv")
    output: Annotated[str | None, BeforeValidator(_output)] = None
    text_calls: Switch | None = Field(None, validation_alias="textCalls")


def _connection_names(value: object) -> object:
    if isinstance(value, Mapping):
        for name in value:
            if not isinstance(name, str) or not _NAME.match(name):
                raise PydanticCustomError(
                    "connection_name",
                    f"connection name {name!r} must be 1-64 characters of [A-Za-z0-9_.-]",
                )
    return value


class PostmortemConfig(_Section):
    """``globalAgents.postmortem``: whether the postmortem runs, on which node's binding, for
    how long at most, the output caps of its turns, and the ``connections`` a binding's
    connection names select.

    ``answerTokens`` is the most an answer turn may ask for (lower when the contract's largest
    answer needs less); ``investigationTokens`` the cap of a turn that investigates (at most
    ``answerTokens``); ``reasoningTokens`` is added to both when the binding sets an effort.
    """

    enabled: Switch = True
    source_node: NodeId = Field(None, validation_alias="sourceNode")
    timeout_ms: TimeoutMs = Field(600_000, validation_alias="timeoutMs")
    answer_tokens: OutputTokens = Field(16_384, validation_alias="answerTokens")
    investigation_tokens: OutputTokens = Field(4_096, validation_alias="investigationTokens")
    reasoning_tokens: ReasoningTokens = Field(8_192, validation_alias="reasoningTokens")
    connections: Annotated[Mapping[str, ConnectionConfig], BeforeValidator(_connection_names)] = (
        Field(default_factory=dict)
    )

    @model_validator(mode="after")
    def _caps_ordered(self) -> PostmortemConfig:
        if self.investigation_tokens > self.answer_tokens:
            raise problem_at(
                ("investigationTokens",),
                "caps_order",
                f"is {self.investigation_tokens}; it must not exceed answerTokens "
                f"({self.answer_tokens}): an investigation turn never needs more than an answer",
            )
        return self


class _GlobalAgents(_Section):
    postmortem: PostmortemConfig = Field(default_factory=PostmortemConfig)


class RuntimeConfig(FamilyModel):
    """Our two sections of a host's runtime JSON, read by :func:`parse_runtime_config`."""

    validation_error = ConfigError

    active_memory: ActiveMemoryConfig = Field(default_factory=ActiveMemoryConfig)
    postmortem: PostmortemConfig = Field(default_factory=PostmortemConfig)

    def without_connections(self) -> RuntimeConfig:
        """This configuration without connection entries: what the runtime JSON embedded in a
        run record may say. A record never chooses where traffic goes or which key it carries;
        only runtime JSON the user or host supplies declares connections."""
        if not self.postmortem.connections:
            return self
        postmortem = self.postmortem.model_copy(update={"connections": {}})
        return self.model_copy(update={"postmortem": postmortem})


class _RuntimeJson(FamilyModel):
    """The shape of the runtime JSON where our sections sit; other keys belong to the host."""

    model_config = ConfigDict(extra="ignore")
    validation_error = ConfigError

    active_memory: ActiveMemoryConfig = Field(
        default_factory=ActiveMemoryConfig, validation_alias="activeMemory"
    )
    global_agents: _GlobalAgents = Field(
        default_factory=_GlobalAgents, validation_alias="globalAgents"
    )


def parse_runtime_config(runtime: Mapping[str, Any]) -> RuntimeConfig:
    """Read our two sections from a host's runtime JSON object; absent sections get defaults."""
    if not isinstance(runtime, Mapping):
        raise ConfigError("runtime", f"must be a JSON object, got {json_type(runtime)}")
    try:
        sections = _RuntimeJson.model_validate(
            dict(runtime), context=_RUNTIME_JSON, by_alias=True, by_name=False
        )
    except ValidationError as error:
        raise ConfigError(*family_problem(error)) from None
    return RuntimeConfig(
        active_memory=sections.active_memory, postmortem=sections.global_agents.postmortem
    )


def load_runtime_config(path: str | Path) -> RuntimeConfig:
    """Read a runtime JSON file through the bounded reader; a missing, special, oversized or
    unparsable file is a ConfigError naming it."""
    file = str(path)
    try:
        data = read_json(path, what="", max_bytes=MAX_RUNTIME_BYTES)
    except InputRefused as refused:
        raise ConfigError(file, refused.problem) from None
    if not isinstance(data, dict):
        raise ConfigError(file, f"must hold a JSON object, got {json_type(data)}")
    return parse_runtime_config(data)
