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
from agents import Agent, ModelProvider, RunConfig, ToolOutputText, UserError, function_tool
from integrations.kit import README, TARGET

__all__ = [
    "IMPLEMENT_MODEL",
    "REVIEW_MODEL",
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
