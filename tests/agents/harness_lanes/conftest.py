"""The folders every harness lane's session is given: a checkout and an evidence folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.harness_lanes.lane_kit import make_folders


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    return make_folders(tmp_path)
