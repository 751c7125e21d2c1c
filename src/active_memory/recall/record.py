"""``@record``: a class declared by its annotated fields, given the ``__init__`` that assigns them.

What ``@dataclass(slots=True, eq=False, repr=False)`` gives: ``__init__`` takes the fields in the
order they are annotated, a field assigned in the class body is that parameter's default, and
the instances have ``__slots__`` of exactly those fields. Equality stays identity and ``repr``
stays the class's own. ``dataclasses`` itself is not used because importing it would cost a
hook call about as much again as every module of the hook path together, and ``typing`` is only
read by type checkers, which see the decorator as a ``dataclass_transform``.

The hook path's own value classes (recall reports, callers, parsed calls, matches) no longer use
it: the ``__init__`` it compiles costs about 70 µs per class at import, about 1 ms of every hook
call for their dozen, so they write ``__slots__`` and ``__init__`` out, as ``ToolCall`` does.
"""

from __future__ import annotations

from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar, dataclass_transform

    C = TypeVar("C", bound=type)
else:

    def dataclass_transform(**_options: object) -> object:
        return lambda decorated: decorated


__all__ = ["record"]


@dataclass_transform(eq_default=False)
def record(cls: C) -> C:
    """``cls`` rebuilt with ``__slots__`` and an assigning ``__init__`` for its annotated fields."""
    # The class's own annotations, as strings (``from __future__ import annotations``): only their
    # names and order are read, so inspect.get_annotations (and its import) is not needed.
    names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
    namespace = {
        key: value
        for key, value in cls.__dict__.items()
        if key not in names and key not in ("__dict__", "__weakref__")
    }
    defaults = {name: cls.__dict__[name] for name in names if name in cls.__dict__}
    namespace["__slots__"] = names
    namespace["__init__"] = _initialiser(cls, names, defaults)
    rebuilt: C = type(cls)(cls.__name__, cls.__bases__, namespace)
    rebuilt.__qualname__ = cls.__qualname__
    return rebuilt


def _initialiser(
    cls: type, names: tuple[str, ...], defaults: dict[str, object]
) -> Callable[..., None]:
    """``def __init__(self, a, b=<default of b>): self.a = a; self.b = b``, compiled once per
    class, so a call costs what the hand-written one did and refuses what it refused."""
    parameters = ", ".join(f"{n}=_defaults[{n!r}]" if n in defaults else n for n in names)
    body = "".join(f"\n    self.{name} = {name}" for name in names) or "\n    pass"
    scope: dict[str, object] = {"_defaults": defaults}
    exec(f"def __init__(self, {parameters}):{body}", scope)
    initialiser: Callable[..., None] = scope["__init__"]  # type: ignore[assignment]
    initialiser.__module__ = cls.__module__
    initialiser.__qualname__ = f"{cls.__qualname__}.__init__"
    return initialiser
