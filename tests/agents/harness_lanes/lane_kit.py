"""What every harness lane's tests start from: the contract, the session's folders (a checkout
and an evidence folder), the request of a session's first turn and a whole session's run."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from active_memory.agents.providers.base import (
    AnswerContract,
    ModelProvider,
    ModelRequest,
    UserMessage,
)
from active_memory.agents.tool_loop import Session, SessionResult
from active_memory.models.runs import Binding
from fake_harness import FakeHarness

__all__ = [
    "CONTRACT",
    "env_for",
    "flag",
    "flags",
    "make_folders",
    "request_for",
    "run_session",
]

CONTRACT = AnswerContract(
    name="graph_discovery",
    schema={
        "type": "object",
        "properties": {"lessons": {"type": "array", "items": {"type": "string"}}},
        "required": ["lessons"],
        "additionalProperties": False,
    },
)


def make_folders(tmp_path: Path) -> dict[str, Path]:
    """A checkout with two files and an evidence folder with one."""
    checkout, evidence = tmp_path / "checkout", tmp_path / "evidence"
    (checkout / "src").mkdir(parents=True)
    (checkout / "src" / "app.py").write_text("print('hi')\n")
    (checkout / "README.md").write_text("# app\n")
    evidence.mkdir()
    (evidence / "run.json").write_text("{}\n")
    return {"repository": checkout, "evidence": evidence}


def request_for(binding: Binding, folders: dict[str, Path], **given: Any) -> ModelRequest:
    """The first turn of a graph discovery session on ``binding``."""
    return ModelRequest(
        model=binding.model,
        system="You are the graph discovery specialist.",
        messages=(UserMessage("The evidence follows."),),
        contract=CONTRACT,
        folders=tuple((name, str(path)) for name, path in sorted(folders.items())),
        **{"effort": binding.effort, **given},
    )


def run_session(
    lane: ModelProvider,
    binding: Binding,
    folders: dict[str, Path],
    *,
    prompt: str = "The evidence follows.",
) -> SessionResult:
    """A whole session on ``lane`` (its repair turn included), given 30 seconds."""
    session = Session(lane, binding, system="sys", prompt=prompt, contract=CONTRACT,
                      deadline=time.monotonic() + 30,
                      folders=request_for(binding, folders).folders)  # fmt: skip
    return asyncio.run(session.run())


def flag(argv: list[str], name: str) -> str:
    """The value that follows option ``name``."""
    return argv[argv.index(name) + 1]


def env_for(fake: FakeHarness, **extra: str) -> dict[str, str]:
    """An environment whose PATH finds ``fake`` first, with a HOME of its own."""
    return {"PATH": fake.path, "HOME": str(fake.folder), **extra}


def flags(argv: list[str], name: str) -> list[str]:
    """The values of every ``name`` option, in order."""
    return [argv[at + 1] for at, word in enumerate(argv) if word == name]
