from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from active_memory.hooks.copilot_sdk import pre_tool_use_hook
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import RecallSession
from recall.kit import REPOSITORY, ROOT, WORKSPACE, lesson_id, widgets_lessons


def session() -> RecallSession:
    return RecallSession(RecallIndex(widgets_lessons(), repository=REPOSITORY), ROOT)


@dataclass
class Invocation:
    session_id: str


@dataclass
class ToolInput:
    toolName: str
    toolArgs: Any
    cwd: str
    timestamp: int = 0


async def test_sdk_callback_answers_with_additional_context_and_records_delivery() -> None:
    served = session()
    hook = pre_tool_use_hook(served, node_id="build", execution_id="e1")
    data = {"toolName": "view", "toolArgs": {"path": "src/widgets/config.py"}, "cwd": WORKSPACE}
    answer = await hook(data, {"session_id": "sdk-session-1"})
    assert answer is not None
    assert f"[{lesson_id(1)}@1]" in answer["additionalContext"]
    delivery = served.ledger.deliveries[0]
    assert (delivery.node_id, delivery.conversation_id, delivery.execution) == (
        "build", "sdk-session-1", "e1")  # fmt: skip
    assert await hook(data, {"session_id": "sdk-session-1"}) is None


async def test_sdk_callback_reads_attribute_objects_and_string_arguments() -> None:
    hook = pre_tool_use_hook(session(), node_id="build", conversation_id="conv-9")
    args = json.dumps({"command": "grep -rn configure_bedrock src"})
    answer = await hook(ToolInput("bash", args, WORKSPACE), Invocation("ignored"))
    assert answer is not None
    assert lesson_id(3) in answer["additionalContext"]


async def test_sdk_callback_never_raises() -> None:
    class Exploding:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("hostile input")

    hook = pre_tool_use_hook(session(), node_id="build")
    assert await hook(Exploding(), None) is None
    assert await hook({"toolArgs": {}}, None) is None
    assert await hook({"toolName": "view", "toolArgs": "{nope"}, None) is None


async def test_sdk_relative_paths_resolve_against_the_working_directory() -> None:
    # The SDK's input carries workingDirectory (not cwd); here a folder inside the workspace.
    data = {"toolName": "view", "toolArgs": {"path": "config.py"}, "sessionId": "sdk-session-2",
            "workingDirectory": f"{WORKSPACE}/src/widgets"}  # fmt: skip
    served = session()
    answer = await pre_tool_use_hook(served, node_id="build")(data, None)
    assert answer is not None
    assert f"[{lesson_id(1)}@1]" in answer["additionalContext"]
    # No invocation: the conversation is the input's own session id.
    assert served.ledger.deliveries[0].conversation_id == "sdk-session-2"
    assert served.receipts.snapshot()[0].paths == ("src/widgets/config.py",)


async def test_sdk_reads_working_directory_from_an_attribute_object() -> None:
    @dataclass
    class SdkInput:
        toolName: str
        toolArgs: Any
        workingDirectory: str

    hook = pre_tool_use_hook(session(), node_id="build", conversation_id="conv-3")
    answer = await hook(SdkInput("view", {"path": "config.py"}, f"{WORKSPACE}/src/widgets"), None)
    assert answer is not None
    assert lesson_id(1) in answer["additionalContext"]
