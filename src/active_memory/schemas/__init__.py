"""JSON Schemas shipped as package data (Draft 2020-12), for hosts that write without Python.

``run-record.schema.json`` is generated from the run record model
(:mod:`active_memory.models.run_schema` rewrites it; a test keeps the two equal). Loading a
record validates it with the model, not with this file.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["load_schema"]


def load_schema(name: str) -> dict[str, Any]:
    """The schema ``<name>.schema.json`` from this package, as a fresh dict."""
    text = resources.files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
