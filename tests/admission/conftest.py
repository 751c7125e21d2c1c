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
from active_memory.provenance import CheckoutState, GitCheckoutVerifier, inspect_checkout

from .builders import Discover, Maintain, build_checkout, make_run


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("checkout-parent") / "checkout"
    _repo, head = build_checkout(root)
    return root, head


@pytest.fixture(scope="session")
def inspected(checkout: tuple[Path, str]) -> tuple[CheckoutState, GitCheckoutVerifier]:
    """The shared checkout inspected once (six git processes, about 15 ms of CPU, for each of
    some 300 tests). Both are frozen snapshots, and no test changes the checkout, which the
    session shares already; a test that needs another state replaces them in its context."""
    root, _ = checkout
    return inspect_checkout(root), GitCheckoutVerifier.open(root)


@pytest.fixture
def context(
    checkout: tuple[Path, str], inspected: tuple[CheckoutState, GitCheckoutVerifier]
) -> AdmissionContext:
    root, head = checkout
    state, verifier = inspected
    return AdmissionContext(
        run=make_run(root, head), config=ActiveMemoryConfig(), checkout=state, verifier=verifier
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
