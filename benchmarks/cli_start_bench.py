"""CLI start-up benchmark: ``active-memory --help`` and ``store path`` against ``python -c pass``.

Run: ``python benchmarks/cli_start_bench.py`` (``--runs N``, default 30).

Every command of ``active-memory`` pays for loading the command line before it does its work;
the cheapest commands show that cost bare. Four series run interleaved, so machine noise hits
them alike, each the median of ``--runs`` spawns:

* the baseline, ``python -c pass`` with the same interpreter (site-packages included, as the
  console script has them);
* ``python -c 'import click'``: the floor of any command that goes through the click command
  line (click 8.5 imports ``inspect``, ``typing``, ``datetime`` and ``uuid`` at start-up);
* ``active-memory --help``: the root group lists every command with its one-line help, from
  its table, without importing a command's module;
* ``active-memory store path``: answered before the command line loads
  (``cli/store_location.py``), so below click's floor.

The console script is the one installed beside this interpreter, run with a temporary state
folder so no user setting changes what it does. Target: ``store path`` ≤ 3× the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

TARGET = 3.0
BASELINE = "python -c pass (baseline)"
STORE_PATH = "active-memory store path"


def console_script() -> Path:
    script = Path(sys.executable).parent / "active-memory"
    if not script.is_file():
        raise SystemExit(
            f"no console script at {str(script)!r}; install the project into this interpreter's "
            "environment with `pip install -e .`"
        )
    return script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="spawns per series (median)")
    options = parser.parse_args()
    script = str(console_script())
    with tempfile.TemporaryDirectory() as scratch:
        env = {
            key: value for key, value in os.environ.items() if not key.startswith("ACTIVE_MEMORY_")
        }
        env["ACTIVE_MEMORY_STATE_DIR"] = scratch

        def spawn(*argv: str) -> Callable[[], None]:
            def run() -> None:
                subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)

            return run

        series: dict[str, Callable[[], None]] = {
            BASELINE: spawn(sys.executable, "-c", "pass"),
            "python -c 'import click'": spawn(sys.executable, "-c", "import click"),
            "active-memory --help": spawn(script, "--help"),
            STORE_PATH: spawn(script, "store", "path"),
        }
        for run in series.values():  # compile the bytecode caches once, as an install has them
            run()
        samples: dict[str, list[float]] = {name: [] for name in series}
        for _ in range(options.runs):
            for name, run in series.items():
                started = time.perf_counter()
                run()
                samples[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in samples.items()}
    base = median[BASELINE]
    print(f"CLI start-up; median of {options.runs} interleaved spawns")
    for name, value in median.items():
        print(f"  {name:<28} {value * 1e3:8.1f} ms   {value / base:5.2f}x")
    ratio = median[STORE_PATH] / base
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"  ratio store path / baseline: {ratio:.2f}x ({verdict} the {TARGET:.0f}x target)")


if __name__ == "__main__":
    main()
