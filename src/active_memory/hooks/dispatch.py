"""From a hook payload to a harness answer: parse, recall, frame, encode.

Used by the broker (helper frames, ``curl`` and HTTP hooks) and by ``active-memory recall``.
The conversation is the one named by the run (``hook_env``) when present, else the harness's own
session id (or a key of its transcript); with none of them the call is answered untracked (every
matching card, nothing remembered) rather than under one conversation shared by every caller
that could not name its own. A subagent is a conversation of its own: when the harness sends an
agent identity (Claude Code's ``agent_id``, which its subagents' calls carry beside the parent's
``session_id``), the key is ``<conversation>/agent:<agent_id>`` (:func:`conversation_key`), so
the main agent and each subagent receive a card once each. The node is the run's, else
``default_node``.

The hook fallback answers through here on every tool call without a broker, so the broker (and
asyncio, threading, logging behind it) is only named for the type checker.
"""

from __future__ import annotations

from active_memory.harnesses import HARNESS_NAMES
from active_memory.recall.exchange import EMPTY_ANSWER, MAX_RESPONSE_BYTES, id_field
from active_memory.recall.recall_session import UNKNOWN_CONVERSATION, Caller
from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from active_memory.hooks.base import Harness
    from active_memory.recall.broker import BrokerAnswer, BrokerRequest, Handler
    from active_memory.recall.recall_session import Recall, RecallSession

__all__ = [
    "HookAnswer",
    "answer_hook",
    "broker_handler",
    "conversation_key",
    "encode",
    "harness_adapter",
]

try:
    # The C string encoder json.dumps(ensure_ascii=False) itself uses: the json package would
    # cost the hook fallback more to import than encoding its answer does.
    from _json import encode_basestring as _json_string
except ImportError:  # an interpreter without CPython's accelerator
    from json.encoder import py_encode_basestring as _json_string


def harness_adapter(name: str) -> Harness | None:
    """The adapter of the harness ``name`` in the harness table (``hooks/<name>.py`` defines
    it as ``HARNESS``), None for a name the table lacks. Imported on first use: a hook call
    needs its own harness's adapter only."""
    if name not in HARNESS_NAMES:
        return None
    # __import__ rather than importlib, which nothing else on the hook fallback's path loads.
    module = __import__(f"active_memory.hooks.{name}", fromlist=["HARNESS"])
    adapter: Harness = module.HARNESS
    return adapter


# Room for the answer envelope and JSON escaping inside the broker's response limit.
_ENVELOPE_BYTES = 512
_SHRINK_ATTEMPTS = 4


def encode(answer: dict[str, Any]) -> bytes:
    """Compact JSON with UTF-8 kept, byte for byte what ``json.dumps(answer,
    ensure_ascii=False, separators=(",", ":"))`` writes, for answers of objects and strings."""
    return _json_value(answer).encode("utf-8")


def _json_value(value: object) -> str:
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, dict):
        members = (f"{_json_string(key)}:{_json_value(item)}" for key, item in value.items())
        return "{" + ",".join(members) + "}"
    raise TypeError(f"a hook answer holds objects and strings, not {type(value).__name__}")


def conversation_key(conversation: str | None, agent_id: str | None) -> str | None:
    """The exposure key of one agent's conversation: ``conversation``, with ``/agent:<id>``
    when the call came from a subagent; None (untracked) without a conversation or when the
    key would not be a recordable id."""
    if not conversation:
        return None
    agent = id_field(agent_id)
    return id_field(f"{conversation}/agent:{agent}" if agent else conversation)


class HookAnswer:
    """An encoded harness answer and the recall behind it (None when nothing was recalled)."""

    __slots__ = ("body", "recall")

    def __init__(self, body: bytes, recall: Recall | None = None) -> None:
        self.body = body
        self.recall = recall

    def commit(self) -> None:
        if self.recall is not None:
            self.recall.commit()

    def release(self) -> None:
        if self.recall is not None:
            self.recall.release()


def answer_hook(
    session: RecallSession,
    harness_name: str,
    payload: Any,
    *,
    node_id: str | None = None,
    conversation_id: str | None = None,
    execution_id: str | None = None,
    default_node: str = "standalone",
    workspace_only: bool = False,
    call_id: str | None = None,
    max_chars: int | None = None,
) -> HookAnswer:
    """Recall for one hook payload. Unknown harnesses and unreadable payloads answer ``{}``.

    ``workspace_only`` answers ``{}`` (recording nothing) when the harness reports a working
    directory outside the workspace, for a long-lived broker that user-wide hooks reach from
    every project. ``call_id`` names the call across answerers (see ``RecallSession.recall``).
    ``max_chars`` narrows the harness's own character cap (Claude Code's restricted mode).
    """
    harness = harness_adapter(harness_name)
    parsed = harness.parse(payload) if harness is not None else None
    if harness is None or parsed is None:
        return HookAnswer(EMPTY_ANSWER)
    cwd = parsed.call.cwd
    if workspace_only and (cwd is None or session.root.resolve(cwd, None) is None):
        return HookAnswer(EMPTY_ANSWER)
    conversation = conversation_key(conversation_id or id_field(parsed.session_id),
                                    parsed.agent_id)  # fmt: skip
    caller = Caller(
        node_id or default_node,
        conversation or UNKNOWN_CONVERSATION,
        execution_id,
        tracked=bool(conversation),
        shared=True,
    )
    budget = min(session.config.hook_injection_bytes, MAX_RESPONSE_BYTES - _ENVELOPE_BYTES)
    if harness.max_bytes is not None:  # the text's own cap: the frame counts its UTF-8 bytes
        budget = min(budget, harness.max_bytes)
    chars = harness.max_chars
    if max_chars is not None:
        chars = max_chars if chars is None else min(chars, max_chars)
    recall = session.recall(parsed.call, caller, max_chars=chars, budget_bytes=budget,
                            call_id=call_id)  # fmt: skip
    for _ in range(_SHRINK_ATTEMPTS):
        body = encode(harness.answer(recall.text))
        if len(body) <= MAX_RESPONSE_BYTES:
            return HookAnswer(body, recall)
        # JSON escaping grew the text past the broker's limit: frame fewer cards.
        recall.release()
        budget -= len(body) - MAX_RESPONSE_BYTES + _ENVELOPE_BYTES
        recall = session.rerender(recall, budget_bytes=budget, max_chars=chars)
    recall.release()
    return HookAnswer(EMPTY_ANSWER)


def broker_handler(
    session: RecallSession, *, default_node: str = "standalone", workspace_only: bool = False
) -> Handler:
    """The broker's request handler over one recall session."""

    def handle(request: BrokerRequest) -> BrokerAnswer:
        return answer_hook(
            session,
            request.harness,
            request.payload,
            node_id=request.node_id,
            conversation_id=request.conversation_id,
            execution_id=request.execution_id,
            default_node=default_node,
            workspace_only=workspace_only,
            call_id=request.call_id,
            max_chars=request.max_chars,
        )

    return handle
