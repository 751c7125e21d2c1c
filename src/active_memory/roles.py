"""The specialist table: one row per specialist role, read by every layer that knows them.

A specialist is this row plus its data: ``prompts/<name>.md`` (its prompt, under the shared
``preamble.md``) and ``contracts/<name>.schema.json`` (the contract its answer must meet); see
:mod:`active_memory.data_folders`. Admission checks an answer against the row's scope and kind,
the evidence builder puts in the bundle what the row says the role sees, the postmortem runs the
rows in order. ``tests/test_roles.py`` fails when a row has no prompt or contract, and
``tests/test_names_defined_once.py`` when a role name is listed anywhere else in ``src``.

Low in the layers and standard library only: evidence, admission and agents all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, TypeAlias, get_args

__all__ = ["ROLES", "ROLE_BY_NAME", "ROLE_ROWS", "Role", "RoleRow", "role_row"]

# The names for type checkers; ROLE_ROWS must hold exactly these, in this order (checked below).
Role: TypeAlias = Literal[
    "graph_maintenance", "repository_maintenance", "graph_discovery", "repository_discovery"
]


@dataclass(frozen=True, slots=True)
class RoleRow:
    """One specialist role.

    ``scope`` is the kind of lesson it keeps or proposes; a ``maintenance`` role decides about
    supplied lessons, a discovery role proposes new ones. The rest is what its evidence bundle
    carries (:func:`active_memory.evidence.builder.build_evidence`): the authored ``graph``, the
    ``checkout``, node ``completions``, agent ``transcripts`` and tool ``receipts``; a
    maintenance role also gets the deliveries of its supplied lessons.
    """

    name: Role
    scope: Literal["graph", "repository"]
    maintenance: bool
    graph: bool
    checkout: bool
    completions: bool
    transcripts: bool
    receipts: bool

    @property
    def contract(self) -> str:
        """The name of the contract its answer is checked against."""
        return self.name


ROLE_ROWS: tuple[RoleRow, ...] = (
    RoleRow(
        "graph_maintenance", "graph", maintenance=True,
        graph=True, checkout=False, completions=True, transcripts=False, receipts=False,
    ),
    RoleRow(
        "repository_maintenance", "repository", maintenance=True,
        graph=False, checkout=True, completions=False, transcripts=False, receipts=True,
    ),
    RoleRow(
        "graph_discovery", "graph", maintenance=False,
        graph=True, checkout=False, completions=True, transcripts=True, receipts=True,
    ),
    RoleRow(
        "repository_discovery", "repository", maintenance=False,
        graph=False, checkout=True, completions=True, transcripts=True, receipts=True,
    ),
)  # fmt: skip
ROLES: tuple[Role, ...] = tuple(row.name for row in ROLE_ROWS)
if get_args(Role) != ROLES:
    raise AssertionError(f"the Role names {get_args(Role)} differ from the table's {ROLES}")
ROLE_BY_NAME: Mapping[str, RoleRow] = MappingProxyType({row.name: row for row in ROLE_ROWS})


def role_row(name: str) -> RoleRow | None:
    """The row of role ``name``, None for a name the table does not know."""
    return ROLE_BY_NAME.get(name)
