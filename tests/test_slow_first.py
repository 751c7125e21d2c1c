"""The slow tests start first under worksteal, a share on each worker (``slow_first.py``)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from slow_first import dealt, pytest_configure_node, slice_sizes, worksteal_workers

TESTS = Path(__file__).parent


def _slices(items: list[str], workers: int) -> list[list[str]]:
    """The first slices xdist's work-stealing scheduler sends (its check_schedule, all idle)."""
    pending, sent = list(items), []
    for remaining in range(workers, 0, -1):
        count = len(pending) // remaining
        sent.append(pending[:count])
        del pending[:count]
    return sent


@pytest.mark.parametrize(("total", "workers"), [(10, 3), (5000, 3), (7, 2), (3, 3), (11, 4)])
def test_the_slices_have_the_scheduler_s_sizes(total: int, workers: int) -> None:
    items = [str(index) for index in range(total)]
    assert slice_sizes(total, workers) == [len(part) for part in _slices(items, workers)]


def test_each_slice_starts_with_its_share_of_the_slow_tests_in_collection_order() -> None:
    items = [f"t{index:02}" for index in range(30)]
    slow_ones = {"t03", "t11", "t12", "t25", "t29"}
    ordered = dealt(items, [item in slow_ones for item in items], 3)
    assert sorted(ordered) == items  # every test once
    assert _slices(ordered, 3) == [
        ["t03", "t25", *(f"t{index:02}" for index in (0, 1, 2, 4, 5, 6, 7, 8))],
        ["t11", "t29", *(f"t{index:02}" for index in (9, 10, 13, 14, 15, 16, 17, 18))],
        ["t12", *(f"t{index:02}" for index in (19, 20, 21, 22, 23, 24, 26, 27, 28))],
    ]


def test_more_slow_tests_than_a_slice_holds_are_all_kept() -> None:
    items = ["a", "b", "c", "d", "e"]
    ordered = dealt(items, [True, True, True, True, False], 2)
    assert sorted(ordered) == items
    assert ordered[:4] == ["a", "c", "b", "d"]


def test_every_test_slow_keeps_them_all_in_their_order_of_dealing() -> None:
    items = ["a", "b", "c", "d", "e"]
    assert dealt(items, [True] * 5, 2) == ["a", "c", "e", "b", "d"]


def test_without_slow_tests_the_order_is_unchanged() -> None:
    items = ["a", "b", "c", "d"]
    assert dealt(items, [False] * 4, 3) == items


@pytest.mark.parametrize(
    ("dist", "expected"),
    [("worksteal", 3), ("load", 0)],  # another scheduler slices differently
)
def test_only_a_worker_of_a_worksteal_run_reorders(dist: str, expected: int) -> None:
    controller = SimpleNamespace(option=SimpleNamespace(dist=dist))
    node = SimpleNamespace(config=controller, workerinput={"workercount": 3})
    pytest_configure_node(node)
    worker = SimpleNamespace(option=SimpleNamespace(dist="no"), workerinput=node.workerinput)
    assert worksteal_workers(cast(pytest.Config, worker)) == expected
    # The controller itself, or a run with `-n 0`, has no workerinput.
    assert worksteal_workers(cast(pytest.Config, controller)) == 0


def test_a_worksteal_run_starts_each_worker_on_a_slow_test(tmp_path: Path) -> None:
    """Slow tests marked at the end of the collection run first, one on each of the two
    workers (the check above reads xdist's own options, so a real run checks they arrive)."""
    shutil.copy(TESTS / "slow_first.py", tmp_path / "slow_first.py")
    (tmp_path / "conftest.py").write_text(
        "import slow_first\n\n"
        "def pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'slow: slow')\n"
        "    config.pluginmanager.register(slow_first, 'slow_first')\n",
        encoding="utf-8",
    )
    (tmp_path / "test_order.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_quick(n):\n"
        "    pass\n\n"
        "@pytest.mark.slow\n"
        "@pytest.mark.parametrize('n', range(2))\n"
        "def test_slow(n):\n"
        "    pass\n",
        encoding="utf-8",
    )
    unused = ("cacheprovider", "langsmith_plugin", "hypothesispytest", "inline_snapshot",
              "anyio", "asyncio", "timeout", "respx")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-n", "2", "--dist", "worksteal",
         *(part for name in unused for part in ("-p", f"no:{name}")),
         f"--basetemp={tmp_path.parent / (tmp_path.name + '-basetemp')}", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    first = {}
    for line in done.stdout.splitlines():
        found = re.match(r"\[(gw\d)\] .* PASSED test_order\.py::(\w+)", line)
        if found:
            first.setdefault(found.group(1), found.group(2))
    assert first == {"gw0": "test_slow", "gw1": "test_slow"}, done.stdout
