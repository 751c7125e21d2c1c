"""``TYPE_CHECKING`` for the modules the hook path imports: ``typing.TYPE_CHECKING`` without
importing :mod:`typing`, a measurable share of a hook call's start-up.

Type checkers, ruff and import-linter read any ``if TYPE_CHECKING:`` as true, whatever module the
name comes from, so ``from active_memory.type_checking import TYPE_CHECKING`` works as the
:mod:`typing` one does, and nothing under it runs. The hook helper (``hooks/helper.py``) and
the session-end hook (``learn/session_end.py``) run without the package on the path, so they
keep a flag of their own; so does the package's ``__init__``, whose public names a test keeps
equal to its lazy export table.
"""

__all__ = ["TYPE_CHECKING"]

TYPE_CHECKING = False
