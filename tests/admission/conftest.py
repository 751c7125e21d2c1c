"""Fixtures for the admission tests; the run record and builders live in ``builders``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from active_memory.admission.validate import (
    AdmissionContext,
    DiscoveryResult,
    MaintenanceResult,
    admit_discovery,
    admit_maintenance,
)
from active_memory.models.config import ActiveMemoryConfig
from active_memory.models.lessons import Lesson
from active_memory.provenance import GitCheckoutVerifier, inspect_checkout

from .builders import Discover, Maintain, build_checkout, make_run


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("checkout-parent") / "checkout"
    _repo, head = build_checkout(root)
    return root, head


@pytest.fixture
def context(checkout: tuple[Path, str]) -> AdmissionContext:
    root, head = checkout
    return AdmissionContext(
        run=make_run(root, head),
        config=ActiveMemoryConfig(),
        checkout=inspect_checkout(root),
        verifier=GitCheckoutVerifier.open(root),
    )


@pytest.fixture
def discover(context: AdmissionContext) -> Discover:
    def run(
        role: str, *lessons: dict[str, Any], ctx: AdmissionContext | None = None
    ) -> DiscoveryResult:
        return admit_discovery({"lessons": list(lessons)}, role, ctx or context)

    return run


@pytest.fixture
def maintain(context: AdmissionContext) -> Maintain:
    def run(
        role: str,
        supplied: list[Lesson],
        *decisions: dict[str, Any],
        ctx: AdmissionContext | None = None,
    ) -> MaintenanceResult:
        return admit_maintenance({"decisions": list(decisions)}, role, supplied, ctx or context)

    return run
