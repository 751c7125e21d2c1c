"""The ``slow`` marker is honest: each slow test says why in a ``Slow:`` sentence of its docstring
(or, for a module marked as a whole, the module's), so ``pytest -m 'not slow'`` leaves out only
what someone decided to leave out, for a reason a reader can weigh."""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _marked_module_wide(item: pytest.Item) -> bool:
    module = getattr(item, "module", None)
    marks = getattr(module, "pytestmark", [])
    marks = marks if isinstance(marks, list) else [marks]
    return any(mark.name == "slow" for mark in marks)


def _reason(item: pytest.Item) -> str:
    if _marked_module_wide(item):
        return inspect.getdoc(getattr(item, "module", None)) or ""
    return inspect.getdoc(getattr(item, "function", None)) or ""


def test_every_slow_test_says_why(request: pytest.FixtureRequest) -> None:
    unexplained = sorted(
        {
            item.nodeid.split("[")[0]
            for item in request.session.items
            if item.get_closest_marker("slow") is not None and "Slow:" not in _reason(item)
        }
    )
    assert not unexplained, "slow tests whose docstring has no 'Slow:' reason: " + ", ".join(
        unexplained
    )


def test_a_slow_test_without_a_reason_is_found(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.slow\n"
        "def test_quiet() -> None:\n"
        "    pass\n\n"
        "@pytest.mark.slow\n"
        "def test_told() -> None:\n"
        '    """Slow: it waits for a real timeout."""\n',
        encoding="utf-8",
    )
    (tmp_path / "conftest.py").write_text(
        "def pytest_configure(config):\n    config.addinivalue_line('markers', 'slow: slow')\n",
        encoding="utf-8",
    )
    shutil.copy(__file__, tmp_path / "test_check.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:langsmith_plugin", "-k", "not without_a_reason", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 2 passed, 1 deselected" in done.stdout, done.stdout
    found = re.findall(r"AssertionError: slow tests whose docstring has no 'Slow:' reason: (.*)",
                       done.stdout)  # fmt: skip
    assert found == ["test_plain.py::test_quiet"], done.stdout
