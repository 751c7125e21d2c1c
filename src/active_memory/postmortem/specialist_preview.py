"""What one specialist session would send the model, rendered without calling it.

:func:`preview_specialist` prepares exactly as a postmortem does (snapshot, lesson changes,
provenance, evidence folder) and renders batch ``batch`` of specialist ``name``: the system
prompt and the first message with the evidence, byte for byte as a provider receives them, with
the prompt and contract sha256 a report would name. No model is called.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from active_memory.admission import contract_sha256
from active_memory.agents.prompts import prompt_sha256
from active_memory.agents.providers.base import ModelRequest, ModelResponse
from active_memory.agents.specialists import SPECS, SessionSubject, session_input
from active_memory.errors import ProviderError
from active_memory.models.runs import RunRecord
from active_memory.postmortem.options import PostmortemOptions
from active_memory.postmortem.preparation import existing_lessons
from active_memory.postmortem.skipping import skip_reason
from active_memory.postmortem.specialist_trial import planned_batch, prepare_specialist

__all__ = ["NoModelCalls", "SpecialistPreview", "preview_specialist"]


class NoModelCalls:
    """A provider for previews: rendering a session never asks a model anything."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise ProviderError("a preview does not call a model")


@dataclass(frozen=True, slots=True)
class SpecialistPreview:
    specialist: str
    batch: int
    batches: int
    system: str
    prompt: str
    tools: tuple[str, ...]
    prompt_sha256: str
    contract_sha256: str
    # Each investigation tool as the provider declares it: name, description, parameters.
    tool_specs: tuple[dict[str, Any], ...] = ()
    # Why a postmortem would not start this specialist on this run (it still renders).
    skipped_reason: str | None = None


async def preview_specialist(
    record: RunRecord, name: str, options: PostmortemOptions, *, batch: int = 0
) -> SpecialistPreview:
    """Render batch ``batch`` of specialist ``name`` on ``record``; PostmortemError for a bad
    specialist, batch or preparation."""
    options = dataclasses.replace(options, provider=options.provider or NoModelCalls())
    prepared = await prepare_specialist(record, name, options)
    supplied, count = planned_batch(record, name, options, prepared, batch)
    spec = SPECS[name]
    subject = SessionSubject(
        f"batch {batch + 1} of {count}",
        supplied.lessons,
        supplied.changes,
        existing_lessons(prepared.snapshot.lessons, name),
    )
    given = await session_input(prepared.env, spec, subject)
    return SpecialistPreview(
        specialist=name,
        batch=batch,
        batches=count,
        system=given.system,
        prompt=given.prompt,
        tools=tuple(tool.name for tool in given.toolbox.specs()),
        tool_specs=tuple(
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in given.toolbox.specs()
        ),
        skipped_reason=skip_reason(record, name, prepared.env, prepared.checkout),
        prompt_sha256=prompt_sha256(name),
        contract_sha256=contract_sha256(name),
    )
