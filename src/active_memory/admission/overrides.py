"""Moved: :mod:`active_memory.data_folders` reads the prompts and contracts and their copies.

Kept for one release so that hosts calling ``using_overrides(Overrides(...))`` keep working;
importing this module warns (DeprecationWarning). A copy must now hold every file of the
shipped folder (:func:`active_memory.data_folders.check_copy`).
"""

from __future__ import annotations

import warnings

from active_memory.data_folders import Overrides, active_overrides, using_overrides

__all__ = ["Overrides", "active_overrides", "using_overrides"]

warnings.warn(
    "active_memory.admission.overrides is deprecated and goes in the next release: use "
    "active_memory.data_folders (Overrides, using_overrides)",
    DeprecationWarning,
    stacklevel=2,
)
