"""Fixtures for the framework integrations.

The OpenAI Agents SDK's import name is ``agents``, and so is ``tests/agents`` (the tests of
``active_memory.agents``) on pytest's path: in one pytest process only one of them can be the
module ``agents``. :func:`openai_agents` makes the SDK that module for one test: it parks the
test package's modules, hides the tests folder from the path, imports the SDK (or reinstates it,
the same module objects every time, so classes stay identical across tests), and puts everything
back afterwards. Outside pytest (a user's program, the benchmark, the doc examples, which run in
a process of their own) there is no such clash.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parents[1]
_sdk_modules: dict[str, ModuleType] = {}


def _take(prefix: str) -> dict[str, ModuleType]:
    taken = {name: module for name, module in sys.modules.items()
             if name == prefix or name.startswith(prefix + ".")}  # fmt: skip
    for name in taken:
        del sys.modules[name]
    return taken


def _on_path(entry: str) -> bool:
    return Path(entry or ".").resolve() == TESTS


@pytest.fixture(scope="session")
def _sdk_at_exit() -> Iterator[None]:
    """Once the tests are done, the SDK is ``agents`` again: its exit hook imports its tracing
    modules late, after every test package is done with the name."""
    yield
    if _sdk_modules:
        _take("agents")
        sys.modules.update(_sdk_modules)


@pytest.fixture
def openai_agents(_sdk_at_exit: None) -> Iterator[ModuleType]:
    """The OpenAI Agents scenario module (``integrations.agents_scenario``), imported with the
    real SDK as ``agents``; skips when the openai-agents extra is not installed."""
    try:
        importlib.metadata.distribution("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the openai-agents extra is not installed")
    parked = _take("agents")
    path = list(sys.path)
    sys.path[:] = [entry for entry in path if not _on_path(entry)]
    sys.modules.update(_sdk_modules)
    try:
        sdk = importlib.import_module("agents")
        assert hasattr(sdk, "Runner"), f"`agents` is not the SDK here: {sdk.__file__}"
        sys.path[:] = path  # the scenario module imports the shared kit from the tests folder
        yield importlib.import_module("integrations.agents_scenario")
    finally:
        _sdk_modules.update(_take("agents"))
        sys.modules.update(parked)
        sys.path[:] = path
