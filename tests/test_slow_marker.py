"""Every slow test says why it is slow (see ``slow_reasons.py``), and that check works."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from inner_pytest import run_pytest
from slow_reasons import UNEXPLAINED

TESTS = Path(__file__).parent


def test_every_slow_test_says_why(request: pytest.FixtureRequest) -> None:
    unexplained = request.config.stash[UNEXPLAINED]
    assert not unexplained, (
        "slow tests whose docstring gives no 'Slow:' reason (say why, or make them fast): "
        + ", ".join(unexplained)
    )


def test_a_slow_test_without_a_reason_fails_the_run_even_when_deselected(tmp_path: Path) -> None:
    for name in ("slow_reasons.py", "inner_pytest.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    # This module up to this test: the check alone, as a test file of the inner run.
    check = Path(__file__).read_text(encoding="utf-8").split("\n\n\ndef test_a_slow_test")[0]
    (tmp_path / "test_check.py").write_text(check + "\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(
        "from slow_reasons import pytest_collection_modifyitems  # noqa: F401\n\n"
        "def pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'slow: slow')\n",
        encoding="utf-8",
    )
    (tmp_path / "test_told.py").write_text(
        '"""Slow: every test here waits for a real timeout."""\n\n'
        "import pytest\n\n"
        "pytestmark = pytest.mark.slow\n\n"
        "def test_module_wide() -> None:\n"
        "    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "test_plain.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.slow\n"
        "def test_told() -> None:\n"
        '    """Slow: it waits for a real timeout."""\n\n'
        "@pytest.mark.slow\n"
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_quiet(n: int) -> None:\n"
        "    pass\n\n"
        "def test_fast() -> None:\n"
        "    pass\n",
        encoding="utf-8",
    )
    done = run_pytest(tmp_path, "-m", "not slow")
    assert "1 failed, 1 passed, 4 deselected" in done.stdout, done.stdout + done.stderr
    assert (
        "AssertionError: slow tests whose docstring gives no 'Slow:' reason (say why, or make "
        "them fast): test_plain.py::test_quiet\n"
    ) in done.stdout, done.stdout
    plain = (tmp_path / "test_plain.py").read_text()
    told = plain.replace("    pass\n\ndef test_fast", '    """Slow: so."""\n\ndef test_fast')
    (tmp_path / "test_plain.py").write_text(told, encoding="utf-8")
    assert "6 passed" in run_pytest(tmp_path).stdout
