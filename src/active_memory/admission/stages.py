"""Admission stage names, in the order they run, and the specialist roles admission judges.

Stage names are stable strings: run logs, reports and dashboards count rejections by them.
``secret``, ``personal`` and ``injection`` run before ``card`` so that a card leaking a
credential or a person's data, or planting an instruction, is reported as such even when it also
breaks a plain card limit.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from active_memory.errors import AdmissionError
from active_memory.roles import ROLES, RoleRow, role_row

__all__ = ["STAGES", "Stage", "role_spec"]

Stage: TypeAlias = Literal[
    "shape",
    "coverage",
    "scope",
    "references",
    "attribution",
    "source",
    "secret",
    "personal",
    "injection",
    "card",
]
STAGES: tuple[Stage, ...] = (
    "shape",  # JSON contract and serialized size: the whole answer
    "coverage",  # maintenance: one decision per supplied id, nothing foreign
    "scope",  # scope opted out; node not an agent or not executed in this run
    "references",  # references not from this run's observed evidence
    "attribution",  # references do not support the claimed node
    "source",  # current checkout does not verify citations and associations
    "secret",  # a credential anywhere in the item
    "personal",  # an e-mail address, a person's home folder, a phone number anywhere in the item
    "injection",  # instruction-like content aimed at future agents
    "card",  # card limits, one line, source positions
)


def role_spec(role: str) -> RoleRow:
    """The spec of ``role``; an unknown role is a host bug, not a specialist's fault."""
    spec = role_row(role)
    if spec is None:
        raise AdmissionError(f"unknown specialist role {role!r}; expected one of {ROLES}")
    return spec
