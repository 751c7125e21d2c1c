"""``TYPE_CHECKING`` for the modules the hook path imports: ``typing.TYPE_CHECKING`` without
importing :mod:`typing`, a measurable share of a hook call's start-up.

Type checkers, ruff and import-linter read any ``if TYPE_CHECKING:`` as true, whatever module the
name comes from, so ``from active_memory.type_checking import TYPE_CHECKING`` works as the
:mod:`typing` one does, and nothing under it runs.
"""

__all__ = ["TYPE_CHECKING"]

TYPE_CHECKING = False
