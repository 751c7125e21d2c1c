"""The screen's first use in a process: what a fresh process pays before its first verdict.

Every process that writes cards (a ``lessons import``, a host's publication after a run, each
writer of ``team_bench.py``) loads the screen once and screens its first card with nothing
compiled yet: the modules' import, then the patterns the card's words call for, compiled on
first use. Each fresh process, after importing what a store's write path has already loaded
(``store.checked``, the models) and building its cards, measures in CPU time:

* ``import``: ``import active_memory.screening.cards``;
* ``first``: ``screen_card`` of the realistic card of ``screening_speed.py`` (640-byte
  recommendation);
* ``second``: ``screen_card`` of another card of the same shape (its text differs, so no memo
  answers for it): the steady-state cost.

    python benchmarks/screening_first_use.py             # median of 7 fresh processes
    python benchmarks/screening_first_use.py --runs 15

Printed: the medians, import plus first screen as a multiple of the second screen and of a
whole ``python -c pass`` (CPU of the process, interleaved), and the floor of the first use: the
patterns it compiled, rebuilt by ``_sre.compile`` from their compiled code (the C primitive
``re.compile`` ends with, without its pure-Python parser and code generator).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from screening_speed import REALISTIC, TITLE

_CHILD = r"""
import json, re, sys, time
import active_memory.store.checked  # what every store write has loaded before it screens
from active_memory.models.lessons import Evidence, LessonDraft, RepositoryScope

REPOSITORY = "forge:example.com/acme/app"
title, recommendation = json.loads(sys.stdin.read())

def card(title, recommendation):
    return LessonDraft(
        scope=RepositoryScope(repository=REPOSITORY, files=("src/app.py",)),
        title=title, recommendation=recommendation,
        evidence=Evidence(run_id="run-1", reason="observed in the run", references=("exec:e1",)),
    )

first_card = card(title, recommendation)
second_card = card(title + " again", recommendation.replace("5 s", "6 s"))
compiled = []  # (source, flags) of every pattern compiled from here on
_compile = re._compile
def recording(pattern, flags):
    if isinstance(pattern, str) and (str, pattern, flags) not in re._cache:
        compiled.append((pattern, flags))
    return _compile(pattern, flags)
re._compile = recording
clock = time.process_time
started = clock()
from active_memory.screening.cards import screen_card
imported = clock()
codes = screen_card(first_card)
first = clock()
screen_card(second_card)
second = clock()
re._compile = _compile
# The floor: the same patterns built by the C primitive from their compiled code.
from re import _compiler, _parser
import _sre
built = []
for source, flags in compiled:
    tree = _parser.parse(source, flags)
    code = _compiler._code(tree, flags)
    index = [None] * tree.state.groups
    for name, number in tree.state.groupdict.items():
        index[number] = name
    built.append((source, flags | tree.state.flags, code, tree.state.groups - 1,
                  tree.state.groupdict, tuple(index)))
floor_start = clock()
for args in built:
    _sre.compile(*args)
floor = clock() - floor_start
print(json.dumps({"import": imported - started, "first": first - imported,
                  "second": second - first, "floor": floor, "patterns": len(compiled),
                  "codes": list(codes)}))
"""


def _child_cpu(argv: list[str], stdin: str = "") -> tuple[float, str]:
    """The CPU (user + system) of one child process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes (median)")
    args = parser.parse_args()
    cards = json.dumps([TITLE, REALISTIC])
    samples: dict[str, list[float]] = {"pass": [], "import": [], "first": [], "second": []}
    floors: list[float] = []
    for _ in range(args.runs):  # interleaved, so machine noise hits both alike
        samples["pass"].append(_child_cpu([sys.executable, "-c", "pass"])[0])
        _, out = _child_cpu([sys.executable, "-c", _CHILD], cards)
        row = json.loads(out)
        for key in ("import", "first", "second"):
            samples[key].append(row[key])
        floors.append(row["floor"])
    median = {key: statistics.median(values) * 1e3 for key, values in samples.items()}
    total = median["import"] + median["first"]
    print(f"screen's first use in a fresh process, CPU, median of {args.runs}:")
    print(
        f"  import {median['import']:.1f} ms + first screen {median['first']:.1f} ms = "
        f"{total:.1f} ms; second screen {median['second']:.2f} ms "
        f"({total / median['second']:.0f}x the second; "
        f"{total / median['pass']:.2f}x python -c pass, {median['pass']:.1f} ms); "
        f"{','.join(row['codes']) or 'clean'}"
    )
    print(
        f"  floor: the {row['patterns']} patterns it compiled, built by _sre.compile from their "
        f"code: {statistics.median(floors) * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
