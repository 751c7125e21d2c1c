"""The OpenAI Agents scenario: two agents (implement hands off to review), each with a function
tool reading the checkout, and the SDK's own scripted Model behind a model provider.

Imported only through the ``openai_agents`` fixture, which makes the SDK the module ``agents``
(see conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.models.interface import Model
from agents.testing import ScriptedModel, assistant_message, function_call

from active_memory.integrations.openai_agents import (
    OpenAIAgentsMemory,
    _with_cards,
    agents_graph,
)
from active_memory.models.runs import Binding
from active_memory.testing import ScriptedProvider
from agents import (
    Agent,
    MaxTurnsExceeded,
    ModelProvider,
    RunConfig,
    ToolOutputText,
    UserError,
    function_tool,
)
from integrations.kit import README, TARGET

__all__ = [
    "IMPLEMENT_MODEL",
    "REVIEW_MODEL",
    "MaxTurnsExceeded",
    "Models",
    "OpenAIAgentsMemory",
    "RunConfig",
    "ToolOutputText",
    "UserError",
    "_with_cards",
    "agents_graph",
    "factory",
    "failing_agent",
    "make_agents",
    "one_read",
    "outputs",
    "review_loop",
    "script",
]

IMPLEMENT_MODEL, REVIEW_MODEL = "gpt-5.1-mini", "gpt-5.1"


class Models(ModelProvider):
    """The SDK's model provider interface, answering each model name with a scripted Model."""

    def __init__(self, models: dict[str, ScriptedModel]) -> None:
        self.models = models

    def get_model(self, model_name: str | None) -> Model:
        return self.models[model_name or ""]


def make_agents(checkout: Path) -> Agent[Any]:
    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the checkout."""
        return (checkout / path).read_text(encoding="utf-8")

    review = Agent(name="review", instructions="Review the change.", model=REVIEW_MODEL,
                   tools=[read_file])  # fmt: skip
    return Agent(name="implement", instructions="Implement the change.", model=IMPLEMENT_MODEL,
                 tools=[read_file], handoffs=[review])  # fmt: skip


def script(implement_reads: int) -> Models:
    reads = [[function_call("read_file", {"path": TARGET}, call_id=f"read-{n}")]
             for n in range(implement_reads)]  # fmt: skip
    implement = ScriptedModel([*reads, [function_call("transfer_to_review", {}, call_id="hand")]])
    review = ScriptedModel([[function_call("read_file", {"path": README}, call_id="readme")],
                            [assistant_message("Approved.")]])  # fmt: skip
    return Models({IMPLEMENT_MODEL: implement, REVIEW_MODEL: review})


def factory(served: list[Binding], provider: ScriptedProvider) -> Any:
    def make(binding: Binding) -> ScriptedProvider:
        served.append(binding)
        return provider

    return make


def outputs(model: ScriptedModel) -> list[str]:
    """The tool outputs the model was sent on its last call."""
    call = model.last_call
    assert call is not None
    assert isinstance(call.input, list)
    return [str(item["output"]) for item in call.input
            if isinstance(item, dict) and item.get("type") == "function_call_output"]  # fmt: skip


def failing_agent() -> Agent[Any]:
    """One agent whose tool raises through the SDK (no failure formatter): nothing comes back."""

    @function_tool(failure_error_function=None)
    def read_file(path: str) -> str:
        """Read a file of the checkout."""
        raise OSError(f"cannot read {path}")

    return Agent(name="implement", instructions="Implement.", model=IMPLEMENT_MODEL,
                 tools=[read_file])  # fmt: skip


def one_read() -> Models:
    implement = ScriptedModel([[function_call("read_file", {"path": TARGET}, call_id="r")],
                               [assistant_message("Done.")]])  # fmt: skip
    return Models({IMPLEMENT_MODEL: implement})


def review_loop(checkout: Path, failure: str) -> tuple[Agent[Any], Models]:
    """Implement reads and edits ``TARGET`` and hands off; review rejects once and hands back;
    implement then fails: its model raises (``failure="model"``) or it keeps reading until the
    run's ``max_turns`` (``failure="turns"``)."""

    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the checkout."""
        return (checkout / path).read_text(encoding="utf-8")

    @function_tool
    def edit_file(path: str, old: str, new: str) -> str:
        """Replace text in a file of the checkout."""
        file = checkout / path
        file.write_text(file.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        return f"edited {path}"

    implement = Agent(name="implement", instructions="Implement the change.",
                      model=IMPLEMENT_MODEL, tools=[read_file, edit_file])  # fmt: skip
    review = Agent(name="review", instructions="Review the change.", model=REVIEW_MODEL,
                   tools=[read_file], handoffs=[implement])  # fmt: skip
    implement.handoffs = [review]
    edit = {"path": TARGET, "old": "pass", "new": "self._buffer.clear()"}
    then: list[Any] = (
        [RuntimeError("the model is overloaded")] if failure == "model"
        else [[function_call("read_file", {"path": TARGET}, call_id=f"again-{n}")]
              for n in range(8)]
    )  # fmt: skip
    implement_model = ScriptedModel([
        [function_call("read_file", {"path": TARGET}, call_id="read")],
        [function_call("edit_file", edit, call_id="edit")],
        [function_call("transfer_to_review", {}, call_id="to-review")],
        *then,
    ])  # fmt: skip
    review_model = ScriptedModel([
        [function_call("read_file", {"path": TARGET}, call_id="review-read")],
        [assistant_message("Rejected: the test asserts before flush()."),
         function_call("transfer_to_implement", {}, call_id="to-implement")],
    ])  # fmt: skip
    return implement, Models({IMPLEMENT_MODEL: implement_model, REVIEW_MODEL: review_model})
