"""Moved: the run-record schema is ``active_memory/contracts/run-record.schema.json`` now.

Kept for one release so that hosts calling ``load_schema("run-record")`` keep working; importing
this module warns (DeprecationWarning). Read the file from the package's ``contracts`` folder,
or use :func:`active_memory.models.run_schema.shipped_schema`.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from active_memory.data_folders import shipped_folder

__all__ = ["load_schema"]

warnings.warn(
    "active_memory.schemas is deprecated and goes in the next release: the schema is "
    "active_memory/contracts/run-record.schema.json (models.run_schema.shipped_schema())",
    DeprecationWarning,
    stacklevel=2,
)


def load_schema(name: str) -> dict[str, Any]:
    """The shipped schema ``<name>.schema.json``, as a fresh dict."""
    text = shipped_folder("contracts").joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
