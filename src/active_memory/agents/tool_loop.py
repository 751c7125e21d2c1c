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

Each turn asks for at most its output cap: an investigation turn ``investigation_cap``, an
answer turn ``answer_cap`` (what the contract's largest answer needs, :mod:`.output_bounds`).
A reply that runs to its cap and repeats one span over most of its text
(:mod:`.repetition`) is discarded and repaired, saying so; looping again ends the session with
:class:`RepetitiveOutput`. An investigation turn cut short without a valid answer is told to
answer now (no repair spent).

The whole loop honours an absolute deadline on :func:`time.monotonic`, or the session's
``share`` of it, re-read while waiting; and a :class:`CancelToken`; asyncio cancellation of the
calling task stops it too. Usage and retries are counted on the :class:`Session` as it goes
(the retries of a call that failed too), so a host can report them even when the session
fails, with the last raw answer (:attr:`Session.raw_answer`) and what the repair turn said it
broke (:attr:`Session.repair_errors`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any, Literal

from active_memory.agents.answer_check import (
    AnswerCheck,
    HostCheck,
    check_answer,
    not_json,
    prose,
)
from active_memory.agents.output_bounds import ANSWER_SLACK_TOKENS, tokens_for_bytes
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
from active_memory.agents.repetition import find_repetition
from active_memory.agents.session_limits import SessionLimits
from active_memory.agents.tools import Toolbox, ToolOutcome
from active_memory.cancel import CancelToken
from active_memory.errors import (
    ContractViolation,
    MalformedAnswer,
    ModelRefused,
    ProviderDeadlineExceeded,
    ProviderError,
    ProviderNoAnswer,
    RepetitiveOutput,
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
    # The largest serialized answer the contract admits (None: unbounded): it lowers the
    # answer turn's output cap below ``limits.answer_tokens``.
    answer_bytes: int | None = None
    # This session's current share of ``deadline`` (a postmortem's fair share per specialist,
    # which grows when others finish): re-read at every turn and while waiting for a reply.
    share: Callable[[], float] | None = None
    # The folders a harness lane's own tools read, as (root, path); an API lane runs toolbox.
    folders: tuple[tuple[str, str], ...] = ()
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
    # What the repair turn told the model its answer broke (empty before a repair).
    repair_errors: tuple[str, ...] = field(default=(), init=False)
    # Files a harness lane's own tools showed the model, as root:path (see ModelResponse).
    harness_reads: set[str] = field(default_factory=set, init=False)
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
            request = self._request()
            response = await self._call(request)
            self._messages.append(AssistantMessage.from_response(response))
            if response.stop_reason == "max_tokens":
                cut = self._cut(response, request.max_tokens)
                if isinstance(cut, tuple):
                    return self._result(*cut, started)
                if cut == "asked_again":
                    continue
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

    @property
    def answer_cap(self) -> int:
        """The output cap of an answer turn: what the contract's largest answer needs (at
        :data:`~.output_bounds.BYTES_PER_TOKEN`), never above ``limits.answer_tokens``."""
        ceiling = self.limits.answer_tokens
        if self.answer_bytes is None:
            return ceiling
        needed = tokens_for_bytes(self.answer_bytes) + ANSWER_SLACK_TOKENS + self._reasoning
        return min(ceiling, needed)

    @property
    def investigation_cap(self) -> int:
        """The output cap of an investigation turn (tool calls), never above the answer's."""
        return min(self.limits.investigation_tokens + self._reasoning, self.answer_cap)

    @property
    def _reasoning(self) -> int:
        effort = self.binding.effort
        return self.limits.reasoning_tokens if effort not in (None, "none") else 0

    def _cut(
        self, response: ModelResponse, cap: int
    ) -> tuple[ModelResponse, dict[str, Any]] | Literal["asked_again", "judge"]:
        """A reply that ran to its output cap. A loop (:func:`find_repetition`) is repaired
        once, saying so; looping again fails the session with :class:`RepetitiveOutput`, or
        gives back the valid answer a host repair was asked about. An investigation turn cut
        short without a valid answer is told to answer now, which spends no repair. Else
        ``judge``: the reply is judged as any other."""
        written = "\n".join(part for part in (response.text, response.answer or "") if part)
        repetition = find_repetition(written)
        if repetition is not None:
            self.raw_answer = response.answer if response.answer is not None else written
            if self.repaired:
                if self._held is not None:
                    return self._held
                raise RepetitiveOutput(
                    self.contract.name, repetition.describe(), repetition.count, cap
                )
            heading = (
                f"Your reply was cut at its {cap}-token output cap: it repeated the same "
                "span over and over, and was discarded:"
            )
            self._repair(response, (f"repeated {repetition.describe()}",), heading)
            return "asked_again"
        if self._final or response.tool_calls:
            return "judge"
        answered = response.answer is not None
        if answered and check_answer(self.contract, response.answer or "").value is not None:
            return "judge"
        self.raw_answer = response.answer if response.answer is not None else written or None
        self._final = True
        self._reply(
            response,
            f"Your reply reached this turn's cap of {cap} output tokens and was cut. "
            "Investigation is over: call no more investigation tools. Give your complete final "
            f"{self.contract.name} answer now, once.",
        )
        return "asked_again"

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
        if time.monotonic() >= self.until():
            raise ProviderDeadlineExceeded(
                f"{self._who}: {self._deadline_name()} passed after {self.turns} turn(s)"
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
            max_tokens=self.answer_cap if self._final else self.investigation_cap,
            deadline=self.deadline,
            final=self._final,
            labels=RequestLabels(self.specialist, self.batch, self.turns + 1, *self.versions),
            folders=self.folders,
        )

    def until(self) -> float:
        """The deadline in force now: ``deadline``, or this session's share of it."""
        return self.deadline if self.share is None else min(self.deadline, self.share())

    def _share_cut(self) -> bool:
        """Whether this session's share, not the whole deadline, is what ends it now."""
        return self.share is not None and self.until() < self.deadline

    def _deadline_name(self) -> str:
        return "its share of the postmortem deadline" if self._share_cut() else "the deadline"

    async def _call(self, request: ModelRequest) -> ModelResponse:
        asked = self.asked_at = time.monotonic()
        call = asyncio.ensure_future(self.provider.complete(request))
        waiters: set[asyncio.Future[Any]] = {call}
        if self.cancel is not None:
            waiters.add(asyncio.ensure_future(self.cancel.wait()))
        try:
            # A share may grow while the call runs (another specialist finished): look again
            # each time the wait ends without a reply.
            while not any(waiter.done() for waiter in waiters):
                remaining = self.until() - time.monotonic()
                if remaining <= 0:
                    cut = f" ({self._deadline_name()})" if self._share_cut() else ""
                    raise ProviderNoAnswer.of(
                        self.provider, asked, f"{self._who}, turn {self.turns + 1}{cut}"
                    )
                await asyncio.wait(waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
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
        self.tool_calls += response.harness_tool_calls
        self.harness_reads |= response.read_paths
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
        until = self.until()
        scope = asyncio.timeout(until - time.monotonic())
        try:
            async with scope:
                return await toolbox.run(call, deadline=until)
        except TimeoutError as e:
            if not scope.expired():
                raise
            raise ProviderDeadlineExceeded(
                f"{self._who}: {self._deadline_name()} passed during tool call {call.name!r}"
            ) from e

    def _missing_answer(self, response: ModelResponse) -> str:
        if response.stop_reason == "max_tokens":
            return "no answer was given: the response hit the token limit"
        if prose(response):
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
            if response.answer is not None and not_json(response.answer):
                raise MalformedAnswer(self.contract.name, errors)
            if response.answer is None and prose(response):
                raise MalformedAnswer(self.contract.name, errors)
            raise ContractViolation(self.contract.name, errors)
        self.repaired = True
        self.repair_errors = errors
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
        self._reply(response, text)

    def _reply(self, response: ModelResponse, text: str) -> None:
        """Tell the model ``text`` after ``response``: as the result of its answer call when
        the API carried the answer as one (it must be answered), else as a user message."""
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
