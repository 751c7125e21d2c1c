"""Public test doubles for code that runs specialist sessions.

``ScriptedProvider`` answers from a list of responses (or a function of the request) and fails
on an unexpected call or on responses left over; the builders make scripted responses short.
``ReplayProvider`` answers from a recorded JSONL file, the same way.
"""

from __future__ import annotations

from active_memory.agents.providers.replay import RecordingProvider, ReplayProvider
from active_memory.agents.providers.scripted import (
    ScriptedProvider,
    answer_response,
    text_response,
    tool_call,
    tool_calls_response,
)

__all__ = [
    "RecordingProvider",
    "ReplayProvider",
    "ScriptedProvider",
    "answer_response",
    "text_response",
    "tool_call",
    "tool_calls_response",
]
