"""The ``slow`` marker is honest: a slow test says why in a ``Slow:`` sentence of its docstring
(or, for a module marked as a whole, the module's), so ``pytest -m 'not slow'`` leaves out only
what someone decided to leave out, for a reason a reader can weigh.

Found when tests are collected, before ``-k`` or ``-m`` deselect any, and reported by
``test_slow_marker.py``: a slow test without its reason fails the run, whichever tests were asked
for.
"""

from __future__ import annotations

import inspect

import pytest


def _reason(item: pytest.Item) -> str:
    module = getattr(item, "module", None)
    marks = getattr(module, "pytestmark", [])
    module_wide = any(
        mark.name == "slow" for mark in (marks if isinstance(marks, list) else [marks])
    )
    holder = module if module_wide else getattr(item, "function", None)
    return inspect.getdoc(holder) or ""


def unexplained(items: list[pytest.Item]) -> list[str]:
    """The slow tests (one name per test function) whose docstring gives no ``Slow:`` reason."""
    return sorted(
        {
            item.nodeid.split("[")[0]
            for item in items
            if item.get_closest_marker("slow") is not None and "Slow:" not in _reason(item)
        }
    )


UNEXPLAINED = pytest.StashKey[list[str]]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before -k and -m deselect (tryfirst), so a deselected slow test is checked too; the test
    # in test_slow_marker.py reports what is found here as an ordinary failure.
    config.stash[UNEXPLAINED] = unexplained(items)
