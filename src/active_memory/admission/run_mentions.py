"""Card text that names this run's evidence: a run id, an execution id or a receipt number.

A card is read later, alone, by an agent that never saw this run, so such a name means nothing
to it and leaks run detail; the justification belongs in the stored ``reason`` and
``references``. Execution ids are matched as whole tokens, and only those that cannot be an
ordinary word of advice: at least six characters and not a node id (a node id such as
``review`` names a step, which a card may mention).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from active_memory.models.runs import RunRecord

__all__ = ["names_run_evidence"]

# ``exec:…``, ``receipt:12``, "receipt 12", "receipt #12", "receipts 3 and 4", "seq 7".
_REFERENCE_WORDS = re.compile(r"\b(?:exec|receipt|run):\S|\b(?:receipts?|seq)\s*#?\d", re.I)
_MIN_ID_CHARS = 6


def _token(value: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(value) + r"(?![A-Za-z0-9_])")


def names_run_evidence(texts: Iterable[str], run: RunRecord) -> bool:
    """Whether any of ``texts`` names the run, one of its executions or a receipt."""
    nodes = {node.id for node in run.graph.nodes}
    names = [run.run_id] + [
        e.id for e in run.executions if len(e.id) >= _MIN_ID_CHARS and e.id not in nodes
    ]
    patterns = [_token(name) for name in names]
    for text in texts:
        if _REFERENCE_WORDS.search(text):
            return True
        if any(pattern.search(text) for pattern in patterns):
            return True
    return False
