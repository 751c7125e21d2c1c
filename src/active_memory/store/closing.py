"""``Closing``: an object that is its own ``with`` block and closes itself at the end of it.

Every store handle (the SQLite and PostgreSQL stores, the remote backend, the quarantine and the
hook fallback's row reader) holds a connection or a pool and frees it in ``close()``; this is
the one ``__enter__``/``__exit__`` pair they share.

Nothing is imported at run time, not even ``typing``: the hook fallback (``store/rows.py``)
runs on every tool call and pays for every module it loads.
"""

from __future__ import annotations

from active_memory.type_checking import TYPE_CHECKING

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

__all__ = ["Closing"]


class Closing:
    """``with handle:`` returns the handle itself and calls its ``close()`` however the block
    ends (an exception still propagates)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
