"""LangGraph messages as the integration reads and changes them: their text, cards appended to
a tool's message, the messages of a state, and which cards a shared history already holds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.types import Command

__all__ = ["Carried", "handed", "message_text", "messages_of"]

ToolResult = ToolMessage | Command[Any]


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part)
            for part in content
            if not isinstance(part, dict) or part.get("type") == "text"
        )
    return str(content)


def _with_cards(message: ToolMessage, cards: str) -> ToolMessage:
    content = message.content
    if isinstance(content, list):
        return message.model_copy(update={"content": [*content, {"type": "text", "text": cards}]})
    text = message_text(content)
    return message.model_copy(update={"content": f"{text}\n\n{cards}" if text else cards})


def handed(result: ToolResult, call_id: str, cards: str) -> tuple[ToolResult, ToolMessage] | None:
    """``result`` carrying the cards in this call's tool message, and that message; None when
    the result holds no message for the call."""
    if isinstance(result, ToolMessage):
        message = _with_cards(result, cards)
        return message, message
    update = result.update
    if not isinstance(update, dict):
        return None
    messages = update.get("messages")
    if not isinstance(messages, list):
        return None
    for index, message in enumerate(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            carrying = _with_cards(message, cards)
            changed = [*messages[:index], carrying, *messages[index + 1 :]]
            command = Command(graph=result.graph, update={**update, "messages": changed},
                              resume=result.resume, goto=result.goto)  # fmt: skip
            return command, carrying
    return None


def messages_of(value: Any, key: str = "messages") -> list[BaseMessage]:
    """The messages of a state or an update: its ``key`` (a dict's or an object's), or the value
    itself when it is a message or a list of them."""
    found = value.get(key) if isinstance(value, dict) else getattr(value, key, value)
    if isinstance(found, BaseMessage):
        return [found]
    if isinstance(found, list | tuple):
        return [item for item in found if isinstance(item, BaseMessage)]
    return []


class Carried:
    """The cards each thread's tool messages carry, by tool call id: what a node's model reads
    again when the nodes share one message history."""

    def __init__(self) -> None:
        self._cards: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = {}
        self._threads: set[str] = set()  # the threads whose tool messages carry cards

    def carries(self, thread: str) -> bool:
        """Whether a tool message of ``thread`` was given cards: only then is its history read."""
        return thread in self._threads

    def add(self, thread: str, call_id: str, text: str, keys: tuple[str, ...]) -> None:
        self._cards.setdefault((thread, call_id), []).append((text, keys))
        self._threads.add(thread)

    def held(self, thread: str, history: Iterable[BaseMessage]) -> set[str]:
        """The ``id@revision`` keys of the cards ``history`` holds in this thread's tool messages
        (a tool call id alone may repeat: the message must hold the cards' text too)."""
        keys: set[str] = set()
        for message in history:
            if not isinstance(message, ToolMessage):
                continue
            entries = self._cards.get((thread, message.tool_call_id))
            if not entries:
                continue
            text = message_text(message.content)
            for cards, carried in entries:
                if cards in text:
                    keys.update(carried)
        return keys
