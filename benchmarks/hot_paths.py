"""Every hot-path figure of issue 33 in one table: measured, against its goal.

Run: ``python benchmarks/hot_paths.py`` (``--quick`` for fewer rounds and spawns).

Each row comes from the benchmark that owns it, run here in one process, each figure a ratio
to a baseline measured in the same run where the goal is a ratio (so a shared, noisy machine
moves both sides alike):

* the run start's recall index at 100,000 lessons, loaded from the file kept for the same rows
  (the goal's figure), beside the build from a snapshot's verified rows and the build that
  also writes the file (``recall_bench``, CPU time), and match p99 at 100,000 lessons (wall
  clock, CPU time, and the least CPU time of 5 repeats of each query);
* the python helper hook and the curl hook against the bare interpreter and bare curl
  (``recall_bench``, live broker);
* the store fallback hook, warm and cold, against the bare interpreter
  (``hook_fallback_bench``);
* redaction with and without the detect-secrets hints, and ``preview_card`` on a 640-byte card
  (``screening_speed``);
* the browser's list, search and lesson pages at 10,000 lessons against a store of the demo's
  size (``ui_bench``);
* publication (batches of 1 and 100) and the fresh snapshot with every lesson decoded, at
  10,000 lessons, against raw SQLite (``store_bench``; PostgreSQL's race is ``team_bench.py``).

Where the rows that miss their goals stand, from their profiles (shared 2-core machine; the
full profiles are in docs/store.md and docs/recall.md, Performance):

* publication: a publication writes the row, a history row holding the same body, the search
  text (its row and the FTS5 entry) and the counters; its commit writes 17 pages to the
  write-ahead log for a batch of 1 (the raw UPDATE 1) and 75 to 185 for a batch of 100 (the
  raw UPDATE 11). ``store_bench`` splits it: SQLite's execute calls alone take 2.8x the raw
  UPDATE's wall time for a batch of 1 and 5.6x for a batch of 100, past both goals before any
  Python; the Python (canonical JSON, checksums, the folded search text) adds 0.9x and 6.3x;
* snapshot with every lesson decoded: its floor, the raw SELECT followed by ``json.loads`` of
  the two JSON columns of every row, building nothing, is 13x to 16x the SELECT alone, so no
  decoder reading this JSON in Python meets 5x; the rows are validated on read because their
  checksum proves what a writer stored, not that this version's rules accept it;
* index at run start: loaded from its file, 0.37 s (load 7 to 10), of which ``marshal.loads``
  of 32 MB about 0.25 s, the digest check 35 ms, the rows' content key 15 ms. A start whose
  rows changed since the last one builds from the rows (1.09 s; decoding 49 MB of JSON, about
  0.3 s, and about 350,000 insertions into tables of 100,000 keys, about 0.35 s, already exceed
  0.5 s) and writes the file (0.5 s more);
* match p99: the slowest calls are edits of about 80 words and 75 identifiers matching 35 to
  80 cards, slow on their first call only (repeated, p99 0.08 ms; as slow pinned to one core;
  p99 0.07 to 0.13 ms at 10,000 lessons): the memory they read in tables of 100,000 keys that
  no recent call touched. At load 1 to 2 the CPU-time p99 went
  from 0.31 to 0.38 ms to 0.29 to 0.30 ms (pairs read as a position, ranking without the ids),
  0.33 to 0.41 ms in this table's process; the row's floor, the same calls' table lookups as
  bare C calls with no scoring, is 0.14 to 0.20 ms (profile in docs/recall.md);
* python helper: the installed ``sh -c`` line alone is 1.07x to 1.17x the bare interpreter
  (1.10x in CPU time); the helper skips the interpreter's teardown (``posix._exit`` once the
  answer is flushed, about 0.15x of a bare run), which pays for the broker's answer and its two
  C modules: 1.11x in CPU time, 1.01x the ``sh -c`` line alone (load 15 to 17);
* curl hook: 1.17x bare curl in CPU time, 1.06x ``sh -c`` on bare curl: the rest is the shell
  (that CPU time leaves out the broker's own work; the wall clock adds its round trip);
* store fallback: importing the warm path's 38 modules (only what it uses) costs about 0.65x
  the interpreter's own start (``os`` and 23 small modules of the package, about 60 µs of each
  the import system's own work), the call itself about 0.2x (unmarshalling the cached index's
  tables about half of it), no teardown; a cold call adds ``_sqlite3`` (about 0.4x), the
  repository key's imports (about 0.75x) and reading, checking and decoding every row (about
  2x at 1,000 lessons), above a floor the
  fallback benchmark prints: the C primitives alone reading, checksumming and scanning the
  rows take 2.6x the bare interpreter.

The hook rows print the wall-clock ratio and, in brackets, the ratio of the spawned processes'
CPU time: on the shared machine the wall clock mostly measures waiting for a core.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hook_fallback_bench
import recall_bench
import screening_speed
import store_bench
import ui_bench

BASELINE = "python3 -I -S -c pass (baseline)"


def rows(quick: bool) -> list[tuple[str, str, str]]:
    """(figure, measured, goal) for every row of the table, measured now."""
    size = 100_000
    table: list[tuple[str, str, str]] = []
    store = store_bench.ratio_figures(quick)
    for batch, goal in ((1, "at most 1.5x"), (100, "at most 3x")):
        table.append((f"publish, batch of {batch} / raw UPDATE",
                      f"{store[f'publish {batch}']:.1f}x (CPU {store[f'publish {batch} cpu']:.1f}x;"
                      f" screened by the store {store[f'publish {batch} screened']:.1f}x)",
                      goal))  # fmt: skip
    table.append(("snapshot of 10,000 lessons, fresh instance / raw SELECT",
                  f"{store['snapshot fresh']:.1f}x ({store['snapshot fresh ms']:.0f} ms)",
                  "kept (at most 5x and 100 ms)"))  # fmt: skip
    table.append(("snapshot + every lesson decoded, fresh / raw SELECT",
                  f"{store['snapshot decoded fresh']:.1f}x (floor, the SELECT and json.loads "
                  f"of its rows: {store['decoding floor']:.1f}x)", "at most 5x"))  # fmt: skip
    build = recall_bench.rows_build_figures(size, rounds=1 if quick else 3)
    table.append((f"recall index at run start, loaded from its file, {size:,} lessons (CPU)",
                  f"{build['cached']:.2f} s (built from rows: {build['rows']:.2f} s; built "
                  f"and written: {build['written']:.2f} s)", "at most 0.5 s"))  # fmt: skip
    index = recall_bench.index_figures(size, queries=500 if quick else 2_000)
    match, match_cpu, match_best = index["match"], index["match_cpu"], index["match_best"]
    assert isinstance(match, list)
    assert isinstance(match_cpu, list)
    assert isinstance(match_best, list)
    p99 = recall_bench.percentile(match, 0.99) * 1e3
    p99_cpu = recall_bench.percentile(match_cpu, 0.99) * 1e3
    p99_best = recall_bench.percentile(match_best, 0.99) * 1e3
    floor = index["floor"]
    assert isinstance(floor, list)
    p99_floor = recall_bench.percentile(floor, 0.99) * 1e3
    table.append((f"recall match p99 at {size:,} lessons",
                  f"{p99:.2f} ms ({p99_cpu:.2f} ms CPU; least of 5 repeats: {p99_best:.2f} ms; "
                  f"floor, its table lookups alone: {p99_floor:.2f} ms CPU)",
                  "at most 0.25 ms"))  # fmt: skip
    hooks = recall_bench.bench_broker(rounds=100 if quick else 500,
                                      spawn_rounds=10 if quick else 40)  # fmt: skip
    table.append(("python helper hook / bare interpreter",
                  f"{hooks['python']:.2f}x (CPU {hooks['python_cpu']:.2f}x)",
                  "at most 1.2x"))  # fmt: skip
    if "curl" in hooks:
        curl = f"{hooks['curl']:.2f}x (CPU {hooks['curl_cpu']:.2f}x)"
        table.append(("curl hook / bare curl", curl, "at most 1.2x"))
    fallback = hook_fallback_bench.fallback_figures(runs=10 if quick else 40, lessons=1000)
    base, base_cpu = fallback[BASELINE]
    for call, label, goal in (("repeated call (warm cache)", "warm", "at most 2x"),
                              ("first call (cold cache)", "cold", "at most 3x")):  # fmt: skip
        wall, cpu = fallback[f"fallback hook, {call}"]
        table.append((f"store fallback hook, {label} / bare interpreter",
                      f"{wall / base:.2f}x (CPU {cpu / base_cpu:.2f}x)", goal))  # fmt: skip
    rates = screening_speed.redaction_figures(rounds=1 if quick else 3)
    table.append(("redaction, 1 MB, hinted / unhinted formats",
                  f"{rates['hinted'] / rates['unhinted']:.2f}x ({rates['hinted']:.2f} MB/s)",
                  "faster"))  # fmt: skip
    preview = statistics.median(screening_speed.timings_ms(screening_speed.REALISTIC, 50))
    table.append(("preview_card, realistic 640-byte card", f"{preview:.2f} ms", "at most 5 ms"))
    for page, by_store in ui_bench.figures(10_000, rounds=3 if quick else 10).items():
        base = by_store["demo-sized store"]
        table.append((f"ui {page} at 10,000 lessons / demo store",
                      f"{by_store['10,000 lessons'] / base:.2f}x (every lesson decoded: "
                      f"{by_store['10,000 lessons, every lesson decoded'] / base:.0f}x)",
                      "at most 2x"))  # fmt: skip
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and spawns")
    options = parser.parse_args()
    table = rows(options.quick)
    widths = [max(len(row[column]) for row in table) for column in range(3)]
    print()
    print(f"| {'figure':<{widths[0]}} | {'measured':<{widths[1]}} | {'goal':<{widths[2]}} |")
    print(f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] + 2)}|{'-' * (widths[2] + 2)}|")
    for figure, measured, goal in table:
        print(f"| {figure:<{widths[0]}} | {measured:<{widths[1]}} | {goal:<{widths[2]}} |")


if __name__ == "__main__":
    main()
