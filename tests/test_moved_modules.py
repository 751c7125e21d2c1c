"""Modules that moved in issue 27 keep working for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from active_memory.data_folders import Overrides, active_overrides
from active_memory.models.run_schema import shipped_schema


def _fresh_import(name: str) -> object:
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_load_schema_still_loads_the_run_record_schema_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match="contracts/run-record.schema.json"):
        schemas = _fresh_import("active_memory.schemas")
    assert schemas.load_schema("run-record") == shipped_schema()  # type: ignore[attr-defined]


def test_admission_overrides_still_switches_the_folders_and_warns(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="active_memory.data_folders"):
        overrides = _fresh_import("active_memory.admission.overrides")
    assert overrides.Overrides is Overrides  # type: ignore[attr-defined]
    with overrides.using_overrides(Overrides()):  # type: ignore[attr-defined]
        assert active_overrides() == Overrides()
