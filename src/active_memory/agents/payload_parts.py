"""The preamble's ``payload`` run value: what one specialist's evidence payload holds.

Written from the evidence builder's own table (:data:`active_memory.evidence.builder.SPECIALISTS`),
so a prompt never promises transcripts or receipts the payload lacks (graph maintenance gets
neither; repository maintenance gets no completions and no transcripts).
"""

from __future__ import annotations

from active_memory.evidence.builder import SPECIALISTS as EVIDENCE_NEEDS

__all__ = ["payload_parts"]


def payload_parts(name: str) -> str:
    """The preamble's list of what this specialist's evidence payload holds, from the builder's
    own table: a prompt that promised transcripts or receipts the payload lacks would have the
    model cite what it cannot see."""
    needs = EVIDENCE_NEEDS[name]
    parts = [
        "`executions` (each with its `ref`, the `exec:` reference to cite"
        + (", and its completion)" if needs.completions else ")")
    ]
    if needs.transcripts:
        parts.append(
            "`transcripts` (records per execution; a tool-call record that has a receipt carries "
            'it as `receipt`, e.g. `"receipt": "receipt:7"`, the reference to cite for that call)'
        )
    if needs.receipts:
        parts.append(
            "`receipts` (the tool calls the host recorded, each with its `ref`, execution, tool "
            "and paths)"
        )
    if needs.graph:
        parts.append("`graph` (the authored graph)")
    parts.append(
        "`deliveries` (the manifest: which lesson `id@revision` was handed to which executions)"
    )
    parts.append(
        "`lessons` (the lessons you decide)"
        if needs.maintenance
        else "`existing_lessons` (the lessons already in your scope)"
    )
    missing = [
        f"`{part}`"
        for part, present in (
            ("completions", needs.completions),
            ("transcripts", needs.transcripts),
            ("receipts", needs.receipts),
        )
        if not present
    ]
    text = "  " + ", ".join(parts) + "."
    if missing:
        text += f" It has no {' and no '.join(missing)}: never cite or infer what it does not show."
    return text
