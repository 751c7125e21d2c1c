"""Fixtures for the conformance suite: the installed CLIs, a checkout with a lesson, a model.

The installs are made once per session, in parallel, for the harnesses the selected tests use
(see ``harnesses.py``); a harness whose install failed skips its tests with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conformance.harnesses import HARNESSES, Harness, Installed, install
from conformance.kit import TARGET, Workspace, make_workspace
from conformance.stand_in import StandIn


def _needed(session: pytest.Session) -> list[str]:
    names: set[str] = set()
    here = Path(__file__).parent
    for item in session.items:
        if here not in Path(str(item.path)).parents:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("harness") in HARNESSES:
            names.add(callspec.params["harness"])
    return sorted(names)


@pytest.fixture(scope="session")
def installs(request: pytest.FixtureRequest) -> Mapping[str, Installed]:
    """Every harness this session will run, installed (or not, with the reason) in parallel."""
    names = _needed(request.session) or list(HARNESSES)
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        done = dict(zip(names, pool.map(lambda name: install(HARNESSES[name]), names), strict=True))
    return done


@pytest.fixture
def installed(harness: Harness, installs: Mapping[str, Installed]) -> Installed:
    """This harness's install; the test skips with the reason when there is none."""
    done = installs.get(harness.name) or install(harness)
    if done.binary is None:
        pytest.skip(done.reason)
    return done


@pytest.fixture
def binary(installed: Installed) -> Path:
    assert installed.binary is not None
    return installed.binary


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path)


@pytest.fixture
def stand_in(harness: Harness, workspace: Workspace) -> Iterator[StandIn]:
    with StandIn(harness.chooser(workspace.project, TARGET)) as model:
        yield model
