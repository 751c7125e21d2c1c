"""Under ``--dist worksteal`` the tests marked ``slow`` start first, a share on each worker.

pytest-xdist's work-stealing scheduler hands each worker one contiguous slice of the collected
tests, in collection order, and an idle worker then steals the back half of the longest queue.
In collection order the slow tests (harness CLIs, a browser, documented command sequences of
15-20 s) sit wherever their folder falls, several of them near the end, so the run can end with
one worker still inside a 20 s test while the others wait. Here the slow tests are dealt out to
the slices one at a time and put at the head of each, so every worker starts with its share of
them and what is left for stealing at the end is short.

Only the order changes: every test still runs, with the same fixtures. Within the slow tests of
a slice, and within the others, the collection order is kept (a module's tests stay together).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from typing import Any, TypeVar

import pytest

Item = TypeVar("Item")


def slice_sizes(total: int, workers: int) -> list[int]:
    """The sizes of the first slices xdist's work-stealing scheduler sends, in order: each
    idle worker in turn gets the pending tests divided by the workers still to serve."""
    sizes: list[int] = []
    left = total
    for remaining in range(workers, 0, -1):
        sizes.append(left // remaining)
        left -= sizes[-1]
    return sizes


def dealt(items: Sequence[Item], slow: Sequence[bool], workers: int) -> list[Item]:
    """``items`` reordered so each of the ``workers`` slices starts with its share of the slow
    ones (dealt round-robin), then the others in their order."""
    sizes = slice_sizes(len(items), workers)
    shares: list[list[Item]] = [[] for _ in sizes]
    others: list[Item] = []
    for item, is_slow in zip(items, slow, strict=True):
        if is_slow:
            shares[sum(map(len, shares)) % len(sizes)].append(item)
        else:
            others.append(item)
    ordered: list[Item] = []
    rest = iter(others)
    for size, share in zip(sizes, shares, strict=True):
        ordered += share
        ordered += islice(rest, max(0, size - len(share)))
    ordered += list(rest)  # more slow tests than a slice holds: the rest follow
    return ordered


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, run on the controller
def pytest_configure_node(node: Any) -> None:
    """Tell each worker the scheduler: a worker's own ``--dist`` option reads ``no``."""
    node.workerinput["dist"] = node.config.option.dist


def worksteal_workers(config: pytest.Config) -> int:
    """The number of workers when this is a worker of a ``--dist worksteal`` run, else 0."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or workerinput.get("dist") != "worksteal":
        return 0
    return int(workerinput["workercount"])


@pytest.hookimpl(trylast=True)  # after -k, -m and the store's deselections
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Reorder ``items`` in place (every worker collects the same tests, so every worker
    computes the same order, as xdist requires)."""
    workers = worksteal_workers(config)
    if workers < 2:
        return
    slow = [item.get_closest_marker("slow") is not None for item in items]
    if any(slow):
        items[:] = dealt(items, slow, workers)
