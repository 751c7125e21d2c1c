"""One specialist session: the tool loop from a prompt to an answer that satisfies its contract.

Send the request; run the tools the model calls and send their results; repeat until the model
gives its final answer, which is parsed and validated with jsonschema against the contract. A
malformed or invalid answer (or none at all) gets ONE repair turn carrying the errors; a second
failure ends the session with :class:`ContractViolation` (:class:`MalformedAnswer` when the
answer was not JSON at all). With ``item_errors_admitted`` a second answer whose errors all lie
inside items of its top-level lists is returned instead (``SessionResult.item_errors``): host
admission refuses those items alone, so one malformed lesson does not cost the others. A
refusal stop ends it at once with :class:`ModelRefused`: a model that declined is not argued
with. Investigation ends (``final``) when two turns remain, the
tool-call budget is spent, or a repair was asked for.

A host may also check a contract-valid answer (:class:`HostCheck`, e.g. repository maintenance
asks admission which keeps of gone cards it would refuse). Its problems use the same single
repair turn when it is still unused; whatever the repaired answer is, it is returned (admission
judges it as ever), and a repaired answer that fails the contract gives way to the valid answer
before it rather than failing the session.

The whole loop honours an absolute deadline on :func:`time.monotonic` (``asyncio.timeout``
around every provider call) and a :class:`CancelToken`; asyncio cancellation of the calling task
stops it too. Usage and retries are counted on the :class:`Session` as it goes (the retries of
a call that failed too), so a host can report them even when the session fails, with the last
raw answer the model gave (:attr:`Session.raw_answer`: its answer, valid or not, or the text it
wrote instead of one).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.agents.providers.base import (
    AnswerContract,
    AssistantMessage,
    Message,
    ModelProvider,
    ModelRequest,
    ModelResponse,
    RequestLabels,
    StopReason,
    TokenUsage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from active_memory.agents.tools import Toolbox, ToolOutcome
from active_memory.cancel import CancelToken
from active_memory.errors import (
    ConfigError,
    ContractViolation,
    MalformedAnswer,
    ModelRefused,
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderNoAnswer,
    SessionCancelled,
)
from active_memory.models.runs import Binding

__all__ = [
    "AnswerCheck",
    "CancelToken",
    "HostCheck",
    "Session",
    "SessionLimits",
    "SessionResult",
    "check_answer",
    "run_session",
]

_MAX_LISTED_ERRORS = 20
_MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """Bounds on one session: provider calls (turns), tool calls, tokens per response."""

    max_turns: int = 24
    max_tool_calls: int = 64
    max_tokens: int = 16_384

    def __post_init__(self) -> None:
        if self.max_turns < 2:
            raise ConfigError("limits.max_turns", "must be at least 2 (an answer and a repair)")
        if self.max_tool_calls < 0:
            raise ConfigError("limits.max_tool_calls", "must not be negative")


@dataclass(frozen=True, slots=True)
class SessionResult:
    """A session that ended with a valid answer, and what it cost."""

    answer: dict[str, Any]
    answer_json: str
    turns: int
    tool_calls: int
    usage: TokenUsage
    retries: int
    elapsed: float
    stop_reason: StopReason
    repaired: bool
    # Contract errors confined to items, left for admission to refuse item by item.
    item_errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    """An answer parsed and validated: ``value`` when valid, else the errors, in path order.
    ``items_only`` is the parsed answer when every error lies inside an item of one of its
    top-level lists (``lessons/3/associations``), so the rest of the answer is sound."""

    value: dict[str, Any] | None
    errors: tuple[str, ...] = field(default=())
    items_only: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class HostCheck:
    """A host-side check of a contract-valid answer: ``problems`` lists what the host would
    refuse (lesson ids and codes, never answer text); ``heading`` opens the repair turn that
    carries them."""

    heading: str
    problems: Callable[[dict[str, Any]], tuple[str, ...]]


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[:_MAX_ERROR_CHARS] + "…"


def _not_json(raw: str) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return True
    return False


def _prose(response: ModelResponse) -> bool:
    """Text alone, with neither an answer nor a tool call: not JSON where an answer was due."""
    return response.answer is None and not response.tool_calls and bool(response.text.strip())


def check_answer(contract: AnswerContract, raw: str) -> AnswerCheck:
    """Parse ``raw`` as JSON and validate it against the contract; never raises."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return AnswerCheck(
            None, (f"the answer is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}",)
        )
    if not isinstance(value, dict):
        return AnswerCheck(None, ("the answer must be a JSON object",))
    validator = Draft202012Validator(dict(contract.schema))
    found = sorted(
        validator.iter_errors(value), key=lambda e: ([str(p) for p in e.absolute_path], e.message)
    )
    if not found:
        return AnswerCheck(value)
    confined = all(
        len(error.absolute_path) >= 2
        and isinstance(error.absolute_path[1], int)
        and isinstance(value.get(str(error.absolute_path[0])), list)
        for error in found
    )
    errors = [
        _short(f"{'/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}")
        for error in found[:_MAX_LISTED_ERRORS]
    ]
    if len(found) > _MAX_LISTED_ERRORS:
        errors.append(f"(+{len(found) - _MAX_LISTED_ERRORS} more errors)")
    return AnswerCheck(None, tuple(errors), value if confined else None)


@dataclass(eq=False, repr=False)
class Session:
    """One specialist's provider session; construct, then ``await session.run()``.

    ``turns``, ``tool_calls``, ``usage`` and ``retries`` are live counters, readable after a
    failure too, and so is ``raw_answer``, the last answer the model gave, valid or not, or the
    text it wrote instead (prose in the tool mode, a refusal). ``binding`` supplies the model
    and effort; the provider was built for its lane and connections.
    """

    provider: ModelProvider
    binding: Binding
    _: KW_ONLY
    system: str
    prompt: InitVar[str]
    contract: AnswerContract
    deadline: float
    toolbox: Toolbox | None = None
    limits: SessionLimits = field(default_factory=SessionLimits)
    cancel: CancelToken | None = None
    specialist: str = ""
    batch: int = 0
    # (prompt sha256, contract sha256): labelled on every request for recordings.
    versions: tuple[str, str] = ("", "")
    item_errors_admitted: bool = False
    host_check: HostCheck | None = None
    turns: int = field(default=0, init=False)
    tool_calls: int = field(default=0, init=False)
    usage: TokenUsage = field(default_factory=TokenUsage, init=False)
    retries: int = field(default=0, init=False)
    repaired: bool = field(default=False, init=False)
    raw_answer: str | None = field(default=None, init=False)
    # Turns whose call was written as text (providers/text_calls.py); the model the server
    # said answered; when the call in flight was sent (None once it returned; kept through a
    # cancellation, so a host that stopped the session can tell a server that never answered).
    text_calls: int = field(default=0, init=False)
    answered_model: str | None = field(default=None, init=False)
    asked_at: float | None = field(default=None, init=False)
    # The valid answer a host repair turn was asked about: returned if the repair fails.
    _held: tuple[ModelResponse, dict[str, Any]] | None = field(default=None, init=False)
    _final: bool = field(default=False, init=False)
    _messages: list[Message] = field(init=False)

    def __post_init__(self, prompt: str) -> None:
        self._messages = [UserMessage(prompt)]

    @property
    def _who(self) -> str:
        return f"session of specialist {self.specialist!r} batch {self.batch}"

    async def run(self) -> SessionResult:
        started = time.monotonic()
        while True:
            self._check_stop()
            self._enter_final_if_due()
            response = await self._call(self._request())
            self._messages.append(AssistantMessage.from_response(response))
            if response.answer is not None:
                self.raw_answer = response.answer
                check = check_answer(self.contract, response.answer)
                if check.value is not None:
                    problems = self._host_problems(check.value)
                    if not problems:
                        return self._result(response, check.value, started)
                    assert self.host_check is not None
                    self._held = (response, check.value)
                    self._repair(response, problems, self.host_check.heading)
                    continue
                partial = check.items_only if self.item_errors_admitted else None
                if partial is not None and self.repaired:
                    return self._result(response, partial, started, check.errors)
                if self._held is not None:
                    return self._result(*self._held, started)
                self._repair(response, check.errors)
            elif response.stop_reason == "refusal":
                self.raw_answer = response.text or None
                raise ModelRefused(self.contract.name, self.turns)
            elif response.tool_calls and not self._final:
                await self._run_tools(response.tool_calls)
            else:
                if response.text.strip():
                    # Text that is not an answer (prose in the tool mode) is still what the
                    # model said instead of one: a prompt author needs to see it.
                    self.raw_answer = response.text
                if self._held is not None:
                    return self._result(*self._held, started)
                self._repair(response, (self._missing_answer(response),))

    def _host_problems(self, value: dict[str, Any]) -> tuple[str, ...]:
        """The host check's problems, asked only while the repair turn is unused: after it the
        answer goes to admission as it is."""
        if self.host_check is None or self.repaired:
            return ()
        return self.host_check.problems(value)

    def _result(
        self,
        response: ModelResponse,
        answer: dict[str, Any],
        started: float,
        item_errors: tuple[str, ...] = (),
    ) -> SessionResult:
        assert response.answer is not None
        return SessionResult(
            answer=answer,
            answer_json=response.answer,
            turns=self.turns,
            tool_calls=self.tool_calls,
            usage=self.usage,
            retries=self.retries,
            elapsed=time.monotonic() - started,
            stop_reason=response.stop_reason,
            repaired=self.repaired,
            item_errors=item_errors,
        )

    def _check_stop(self) -> None:
        if self.cancel is not None and self.cancel.cancelled:
            raise SessionCancelled(f"{self._who} was cancelled after {self.turns} turn(s)")
        if time.monotonic() >= self.deadline:
            raise ProviderDeadlineExceeded(
                f"{self._who}: the deadline passed after {self.turns} turn(s)"
            )

    def _enter_final_if_due(self) -> None:
        if self._final:
            return
        last_turns = self.limits.max_turns - self.turns <= 2
        no_tools = self.tool_calls >= self.limits.max_tool_calls
        if last_turns or no_tools:
            self._final = True
            self._messages.append(
                UserMessage(
                    "Investigation is over: call no more investigation tools. Give your "
                    f"complete final {self.contract.name} answer now."
                )
            )

    def _request(self) -> ModelRequest:
        return ModelRequest(
            model=self.binding.model,
            system=self.system,
            messages=tuple(self._messages),
            contract=self.contract,
            tools=self.toolbox.specs() if self.toolbox is not None else (),
            effort=self.binding.effort,
            max_tokens=self.limits.max_tokens,
            deadline=self.deadline,
            final=self._final,
            labels=RequestLabels(self.specialist, self.batch, self.turns + 1, *self.versions),
        )

    async def _call(self, request: ModelRequest) -> ModelResponse:
        asked = self.asked_at = time.monotonic()
        remaining = self.deadline - asked
        call = asyncio.ensure_future(self.provider.complete(request))
        waiters: set[asyncio.Future[Any]] = {call}
        if self.cancel is not None:
            waiters.add(asyncio.ensure_future(self.cancel.wait()))
        try:
            async with asyncio.timeout(remaining):
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError as e:
            raise ProviderNoAnswer.of(
                self.provider, asked, f"{self._who}, turn {self.turns + 1}"
            ) from e
        finally:
            pending = [waiter for waiter in waiters if not waiter.done()]
            for waiter in pending:
                waiter.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        self.asked_at = None
        if not call.done() or call.cancelled():
            raise SessionCancelled(f"{self._who} was cancelled during turn {self.turns + 1}")
        error = call.exception()
        if isinstance(error, ProviderError):
            # The call failed after its retries: they were spent all the same.
            self.retries += error.retries
        response = call.result()
        self.turns += 1
        self.usage += response.usage
        self.retries += response.retries
        self.text_calls += response.text_form
        self.answered_model = self.answered_model or response.model or None
        return response

    async def _run_tools(self, calls: tuple[ToolCall, ...]) -> None:
        for call in calls:
            self._check_stop()
            if self.toolbox is None:
                content, is_error = "no investigation tools are available in this session", True
            elif self.tool_calls >= self.limits.max_tool_calls:
                content, is_error = "the tool-call budget is spent; give your final answer", True
            else:
                self.tool_calls += 1
                outcome = await self._run_tool(self.toolbox, call)
                content, is_error = outcome.content, outcome.is_error
            self._messages.append(ToolResult(call.id, call.name, content, is_error))

    async def _run_tool(self, toolbox: Toolbox, call: ToolCall) -> ToolOutcome:
        # Tools bound their own work by the deadline (regex match timeouts, chunked reads);
        # this timeout is the session's guarantee that it ends at the deadline regardless.
        scope = asyncio.timeout(self.deadline - time.monotonic())
        try:
            async with scope:
                return await toolbox.run(call, deadline=self.deadline)
        except TimeoutError as e:
            if not scope.expired():
                raise
            raise ProviderDeadlineExceeded(
                f"{self._who}: the deadline passed during tool call {call.name!r}"
            ) from e

    def _missing_answer(self, response: ModelResponse) -> str:
        if response.stop_reason == "max_tokens":
            return "no answer was given: the response hit the token limit"
        if _prose(response):
            # Adapters take text as the answer except in the tool mode, where it is not JSON.
            return (
                "the reply is text, not a JSON object: give the answer by calling the "
                f"{self.contract.name} tool"
            )
        return f"no answer was given; the answer must be given as {self.contract.name}"

    def _repair(
        self, response: ModelResponse, errors: tuple[str, ...], heading: str | None = None
    ) -> None:
        """Ask once for a corrected answer; a second failure is the session's failure."""
        if self.repaired:
            if response.answer is not None and _not_json(response.answer):
                raise MalformedAnswer(self.contract.name, errors)
            if response.answer is None and _prose(response):
                raise MalformedAnswer(self.contract.name, errors)
            raise ContractViolation(self.contract.name, errors)
        self.repaired = True
        self._final = True
        for call in response.tool_calls:
            self._messages.append(
                ToolResult(call.id, call.name, "not run: give your final answer instead", True)
            )
        listed = "\n".join(f"- {error}" for error in errors)
        if heading is None:
            heading = f"Your answer does not satisfy the {self.contract.name} contract:"
        text = (
            f"{heading}\n{listed}\n"
            "Give the complete corrected answer now; do not call investigation tools."
        )
        if response.answer is not None and response.answer_call_id is not None:
            self._messages.append(
                ToolResult(response.answer_call_id, self.contract.name, text, is_error=True)
            )
        else:
            self._messages.append(UserMessage(text))


async def run_session(
    provider: ModelProvider,
    binding: Binding,
    *,
    system: str,
    prompt: str,
    contract: AnswerContract | Mapping[str, Any],
    deadline: float,
    contract_name: str = "answer",
    toolbox: Toolbox | None = None,
    limits: SessionLimits | None = None,
    cancel: CancelToken | None = None,
    specialist: str = "",
    batch: int = 0,
) -> SessionResult:
    """Run one session to a valid answer; ``contract`` may be a bare strict JSON Schema dict."""
    if not isinstance(contract, AnswerContract):
        contract = AnswerContract(name=contract_name, schema=contract)
    session = Session(
        provider,
        binding,
        system=system,
        prompt=prompt,
        contract=contract,
        deadline=deadline,
        toolbox=toolbox,
        limits=limits or SessionLimits(),
        cancel=cancel,
        specialist=specialist,
        batch=batch,
    )
    return await session.run()
