"""Evidence references and what this run actually observed.

A specialist may only cite what the host saw in *this* run: executions of agent nodes of the
authored graph and the tool receipts recorded for them. Imported history (executions copied from
an earlier run) and auxiliary agents (nodes outside the authored graph, such as the postmortem's
own specialists) never count as current evidence. Attribution then asks whether the cited
evidence belongs to the node a lesson is about: at least one ``exec:``/``receipt:`` reference
must be the node's own; other agent nodes' executions and receipts may be cited beside it as
support (the reviewer's verdict on a worker's output, the worker output a reviewer judged).

A ``repository:`` reference names a root-relative file: ``repository:./docs/a.md`` is normalised
to ``repository:docs/a.md``; a position suffix (``repository:src/a.py:24``, ``…#L24``) is
refused as ``repository_position``, since a reference names a file, never a line. A path that
is not literal and root-relative (``/etc/passwd``, ``~/projects/app/a.py``, ``../outside``,
``src/../a.py``, ``src\\a.py``, ``docs/``) is refused as ``repository_path_invalid`` before the
checkout is asked about it: such a path is never what the tools print, and "missing" would send
the model looking for the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast

from active_memory.errors import LessonValidationError
from active_memory.models.lessons import validate_reference
from active_memory.models.runs import Execution, RunRecord, ToolReceipt

__all__ = [
    "Reference",
    "RunEvidence",
    "attribution_problem",
    "parse_references",
    "reference_problem",
]

ReferenceKind: TypeAlias = Literal["exec", "receipt", "repository", "graph", "source"]


@dataclass(frozen=True, slots=True)
class Reference:
    kind: ReferenceKind
    value: str

    @property
    def text(self) -> str:
        """The reference as stored: ``kind:value`` after normalisation."""
        return f"{self.kind}:{self.value}"

    @property
    def is_run_evidence(self) -> bool:
        return self.kind in ("exec", "receipt")


# A line or column after a cited file: ``path:24``, ``path:24:5``, ``path#L24``, ``path#L2-L9``.
_POSITION_SUFFIX = re.compile(r"(?::\d+(?:[-:]\d+)*|#L\d+(?:-L?\d+)?)$")


# A drive letter (``C:``) or a backslash: a Windows path, never what the tools print.
_WINDOWS = re.compile(r"^[A-Za-z]:|\\")


def _root_relative(path: str) -> bool:
    """A ``/``-separated path inside the root: not absolute, no empty, ``.`` or ``..`` part.
    Glob characters are allowed: ``app/[id]/page.tsx`` is a real file name."""
    if not path:
        return True  # the empty reference is malformed, refused by the reference grammar
    if path.startswith(("/", "~")) or _WINDOWS.search(path):
        return False  # a home path (``~/projects/app/a.py``) is no more inside than ``/home/…``
    return all(part not in ("", ".", "..") for part in path.split("/"))


def _normalised(text: str) -> str:
    """``repository:./path`` as ``repository:path``; every other reference unchanged."""
    if not text.startswith("repository:"):
        return text
    value = text[len("repository:") :]
    while value.startswith("./"):
        value = value[2:]
    return "repository:" + value


def parse_references(texts: Sequence[str]) -> tuple[tuple[Reference, ...], str | None]:
    """Parse ``kind:value`` references; the second item is a refusal code or None."""
    parsed: list[Reference] = []
    seen: set[str] = set()
    for index, raw in enumerate(texts):
        text = _normalised(raw) if isinstance(raw, str) else raw
        if (
            isinstance(text, str)
            and text.startswith("repository:")
            and _POSITION_SUFFIX.search(text)
        ):
            return (), "repository_position"
        if (
            isinstance(text, str)
            and text.startswith("repository:")
            and not _root_relative(text[len("repository:") :])
        ):
            return (), "repository_path_invalid"
        try:
            validate_reference(f"references[{index}]", text)
        except LessonValidationError as error:
            too_long = "UTF-8 bytes" in error.problem
            return (), "reference_too_long" if too_long else "malformed_reference"
        if text in seen:
            return (), "duplicate_reference"
        seen.add(text)
        kind, value = text.split(":", 1)
        if kind == "receipt" and not value.isdigit():
            return (), "malformed_reference"
        parsed.append(Reference(cast(ReferenceKind, kind), value))
    return tuple(parsed), None


@dataclass(frozen=True, slots=True)
class RunEvidence:
    """An index over a run record: which executions and receipts are current evidence."""

    run: RunRecord
    executions: Mapping[str, Execution]
    receipts: Mapping[int, ToolReceipt]
    agent_kinds: Mapping[str, str]

    @classmethod
    def of(cls, run: RunRecord) -> RunEvidence:
        agent_kinds = {node.id: node.kind for node in run.graph.nodes if node.is_agent}
        return cls(
            run=run,
            executions={execution.id: execution for execution in run.executions},
            receipts={receipt.seq: receipt for receipt in run.receipts},
            agent_kinds=agent_kinds,
        )

    def is_agent(self, node_id: str) -> bool:
        return node_id in self.agent_kinds

    def executed(self, node_id: str) -> bool:
        """Whether ``node_id`` ran in this run (imported history does not count)."""
        return any(e.node_id == node_id and not e.imported for e in self.executions.values())

    def first_start_ms(self, node_id: str) -> int | None:
        starts = [
            e.started_ms
            for e in self.executions.values()
            if e.node_id == node_id and not e.imported
        ]
        return min(starts) if starts else None

    def execution_of(self, reference: Reference) -> Execution | None:
        """The execution behind an ``exec:`` or ``receipt:`` reference, if there is one."""
        if reference.kind == "exec":
            return self.executions.get(reference.value)
        if reference.kind == "receipt":
            receipt = self.receipts.get(int(reference.value))
            if receipt is None or receipt.execution is None:
                return None
            return self.executions.get(receipt.execution)
        return None


def _execution_problem(
    execution_id: str, evidence: RunEvidence, kind: str, *, unknown: str
) -> str | None:
    """Why the execution a ``kind`` reference leads to is not evidence: ``unknown`` when the run
    has no execution by that id, else imported or not an agent's."""
    execution = evidence.executions.get(execution_id)
    if execution is None:
        return unknown
    if execution.imported:
        return f"{kind}_imported"
    if not evidence.is_agent(execution.node_id):
        return f"{kind}_auxiliary"
    return None


def reference_problem(
    references: Iterable[Reference], evidence: RunEvidence, *, graph_node_ids: Iterable[str]
) -> str | None:
    """Why a reference is not this run's observed evidence, or None when all are."""
    nodes = set(graph_node_ids)
    for reference in references:
        if reference.kind == "source":
            # The host records the inspected commit itself; a model never supplies provenance.
            return "source_reference_reserved"
        if reference.kind == "graph" and reference.value not in nodes:
            return "graph_node_unknown"
        if reference.kind == "exec":
            problem = _execution_problem(reference.value, evidence, "exec", unknown="exec_unknown")
            if problem:
                return problem
        if reference.kind == "receipt":
            receipt = evidence.receipts.get(int(reference.value))
            if receipt is None:
                return "receipt_unknown"
            if receipt.execution is not None:
                problem = _execution_problem(
                    receipt.execution, evidence, "receipt", unknown="receipt_auxiliary"
                )
                if problem:
                    return problem
    return None


def attribution_problem(
    references: Iterable[Reference], node_id: str, evidence: RunEvidence, *, require_own: bool
) -> str | None:
    """Why the run evidence does not support a lesson about ``node_id``, or None.

    Every ``exec:``/``receipt:`` reference must resolve to an execution; when any is cited, at
    least one must be the node's own (other agent nodes' evidence is allowed beside it as
    support). With ``require_own`` the node's own evidence is needed even when none is cited.
    """
    own = False
    cited = False
    for reference in references:
        if not reference.is_run_evidence:
            continue
        cited = True
        execution = evidence.execution_of(reference)
        if execution is None:
            return "receipt_unattributed"
        own = own or execution.node_id == node_id
    if (cited or require_own) and not own:
        return "no_own_evidence"
    return None
