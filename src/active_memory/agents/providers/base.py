"""The one provider interface and the toolkit's own frozen types around it.

A provider turns a :class:`ModelRequest` into a :class:`ModelResponse`; nothing else crosses the
boundary. Adapters (``anthropic.py``, ``openai.py``) convert these types to and from their SDK's
wire shapes, and SDK types never leave an adapter. The final answer is always a JSON text that
the session parses and validates against the :class:`AnswerContract`: adapters only carry it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Protocol, TypeAlias

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from active_memory.errors import ConfigError

__all__ = [
    "OUTPUT_MODES",
    "AnswerContract",
    "AssistantMessage",
    "Message",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "OutputMode",
    "ReasoningBlock",
    "RequestLabels",
    "StopReason",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "UserMessage",
]

# Both APIs accept tool and schema names of this shape; OpenAI caps them at 64 characters.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

StopReason: TypeAlias = Literal["end_turn", "tool_use", "max_tokens", "refusal", "other"]
# How an adapter asks for the final answer (see providers/output.py): as a tool whose input
# schema is the contract, as the API's native structured output, or as JSON the prompt asks for.
OutputMode: TypeAlias = Literal["tool", "native", "prompted"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("tool", "native", "prompted")


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens one or more responses used.

    ``input_tokens`` counts every prompt token, cached or not; ``cache_read_tokens`` and
    ``cache_write_tokens`` are the parts of it read from or written to a prompt cache (Anthropic
    reports both; OpenAI reports the read part as ``cached_tokens``). What the cache did not
    serve is :attr:`uncached_input_tokens`.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens the cache did not serve (a cache write among them)."""
        return self.input_tokens - self.cache_read_tokens


def _check_name(kind: str, name: str) -> None:
    if not _NAME.match(name):
        raise ConfigError(f"{kind}.name", f"{name!r} must be 1-64 characters of [A-Za-z0-9_-]")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """An investigation tool the model may call: its name, purpose and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def __post_init__(self) -> None:
        _check_name("tool", self.name)


@dataclass(frozen=True, slots=True)
class AnswerContract:
    """The shape of the final answer: a name and a strict JSON Schema (Draft 2020-12) object."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""

    def __post_init__(self) -> None:
        _check_name("contract", self.name)
        try:
            Draft202012Validator.check_schema(dict(self.schema))
        except SchemaError as e:
            raise ConfigError(
                f"contract {self.name!r}", f"is not a valid JSON Schema: {e.message}"
            ) from e
        if self.schema.get("type") != "object":
            raise ConfigError(
                f"contract {self.name!r}", 'the schema must describe an object ("type": "object")'
            )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the model wrote it; ``arguments`` is its raw JSON text, maybe malformed."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """Opaque model reasoning that must be sent back verbatim to continue a tool loop.

    ``kind`` is the adapter's own label (e.g. ``thinking``); ``signature`` authenticates it.
    """

    kind: str
    content: str
    signature: str = ""


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model said in one turn, kept so the next request can replay the conversation."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    answer: str | None = None
    answer_call_id: str | None = None
    reasoning: tuple[ReasoningBlock, ...] = ()

    @classmethod
    def from_response(cls, response: ModelResponse) -> AssistantMessage:
        # Each field of a message is the response's field of the same name.
        return cls(**{part.name: getattr(response, part.name) for part in fields(cls)})


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The result of one tool call (or of an answer call, when it is refused) for the model."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


Message: TypeAlias = UserMessage | AssistantMessage | ToolResult


@dataclass(frozen=True, slots=True)
class RequestLabels:
    """Which session turn a request belongs to; replay matches recorded exchanges on these.

    ``prompt_sha256`` and ``contract_sha256`` name the prompt and contract versions the request
    was built from (empty outside a specialist session), so a recording can tell a prompt edit
    apart from new evidence."""

    specialist: str = ""
    batch: int = 0
    turn: int = 0
    prompt_sha256: str = ""
    contract_sha256: str = ""

    def describe(self) -> str:
        return f"specialist {self.specialist!r} batch {self.batch} turn {self.turn}"


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model call.

    ``deadline`` is absolute, on the :func:`time.monotonic` clock; ``final`` says investigation
    is over and the model must answer now (adapters withdraw or refuse investigation tools).
    ``folders`` names the folders the investigation tools read, as ``(root name, absolute
    path)``: an API lane ignores them (the host runs ``tools``), a harness lane hands them to
    the harness's own read-only tools.
    """

    model: str
    system: str
    messages: tuple[Message, ...]
    contract: AnswerContract
    tools: tuple[ToolSpec, ...] = ()
    effort: str | None = None
    max_tokens: int = 16_384
    deadline: float | None = None
    final: bool = False
    labels: RequestLabels = field(default_factory=RequestLabels)
    folders: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ConfigError("request.max_tokens", f"is {self.max_tokens}; it must be at least 1")
        names = [tool.name for tool in self.tools]
        if self.contract.name in names or len(set(names)) != len(names):
            raise ConfigError(
                "request.tools", f"tool names {names!r} must be unique and differ from the contract"
            )

    def remaining(self, clock: Callable[[], float] = time.monotonic) -> float | None:
        """Seconds left before the deadline (negative once passed), or None without one."""
        return None if self.deadline is None else self.deadline - clock()


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One model turn in the toolkit's terms.

    ``answer`` is the raw JSON text of the final answer when the model gave one;
    ``answer_call_id`` is set when the API carried it as a tool call (Anthropic), so a repair
    turn can reply to that call. ``retries`` counts the extra attempts this call needed.
    ``model`` is the model the server says answered; ``text_form`` is True when the turn's
    call (or answer call) was written as text and taken as a call (see ``text_calls.py``).
    A harness lane runs its own tools inside one turn: ``harness_tool_calls`` counts them and
    ``read_paths`` names the files they showed the model, as ``root:relative/path`` of the
    request's ``folders``.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    answer: str | None = None
    answer_call_id: str | None = None
    reasoning: tuple[ReasoningBlock, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    stop_reason: StopReason = "end_turn"
    retries: int = 0
    model: str = ""
    text_form: bool = False
    harness_tool_calls: int = 0
    read_paths: frozenset[str] = frozenset()


class ModelProvider(Protocol):
    """The whole provider interface: one async call, toolkit types in and out."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...
