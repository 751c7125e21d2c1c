"""Credential redaction's speed on the lines an evidence build redacts.

``screening.secrets.redact_credentials`` runs over every line of evidence (commands, their
output, transcript prose) before it reaches a provider. This redacts a mix of realistic
~430-character lines (Python and shell code, log output, English prose, JSON, one in ten
holding a credential) and short executions' lines, and prints µs per line and MB/s as redaction
runs (each format only over texts holding one of its hints), then with every format run over
every text (no hints), as a ratio in the same run. Times are this process's CPU time (the
median of the rounds), which another process sharing the machine hardly moves.

    python benchmarks/redact_bench.py
    python benchmarks/redact_bench.py --lines 4000 --rounds 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable
from unittest import mock

from active_memory.screening import secrets

_CODE = (
    "    def build_index(self, rows: list[Row], *, limit: int = 200) -> dict[str, list[int]]:"
    "  # rows come from store.fetch_rows(); keep the order the query gave\n"
    "        index: dict[str, list[int]] = defaultdict(list)\n"
    "        for position, row in enumerate(rows[:limit]):\n"
    "            index[row.key.casefold()].append(position)  # casefold: keys are user text\n"
    "        return dict(index)"
)
_SHELL = (
    "$ PYTHONPATH=src python -m pytest tests/store/test_migrations.py -x -q -p no:cacheprovider"
    " --maxfail=1 -k 'history and not slow' 2>&1 | tee /tmp/run.log; git diff --stat HEAD~1 -- "
    "src/active_memory/store/ && ls -la build/ dist/ && docker compose -f deploy/compose.yml "
    "up -d db && psql -h localhost -U app -d lessons -c 'select count(*) from history'"
)
_LOG = (
    "2026-12-05T02:11:43.512Z INFO  [worker-3] request_id=7f3a9c1e-55b2-4d8e-9a61-2c0b7e4f1d93"
    " GET /api/v2/projects/418/lessons?limit=50&cursor=eyJpZCI6NDJ9 200 in 38 ms (db 12 ms, "
    "cache hit); WARN [scheduler] job compact_history took 4.2 s, above the 2 s budget; "
    "retrying with batch_size=500 next run. DEBUG pool size=8 idle=5 waiting=0 host=db-2.internal"
)
_PROSE = (
    "The migration failed because the history table still had rows whose revision was null: "
    "the m007 step assumed every row had one. I backfilled them from the lessons table, reran "
    "the tests against a fresh SQLite file, and they passed. Next, the recall index should "
    "score exact file matches first; the keyword groups come after, and ties go to the newer "
    "lesson. I will also keep the busy timeout at five seconds on CI."
)
_JSON = (
    '{"id": "01JB3K9Q4W8ZP2N6V0M5R7T1XA", "kind": "execution", "command": "npm test -- --run",'
    ' "exit_code": 1, "duration_ms": 8421, "cwd": "/home/dev/app", "stdout_tail": "FAIL '
    'src/api/client.test.ts > retries on 503 (expected 3 calls, got 2)", "files": ["src/api/'
    'client.ts", "src/api/retry.ts"], "labels": {"suite": "unit", "runner": "vitest"}, '
    '"truncated": false}'
)
_WITH_SECRET = (
    "export DATABASE_URL=postgres://app:Xq7-fake-Pass-2024@db.internal:5432/lessons && curl -H "
    "'Authorization: Bearer abcdef1234567890ABCDEFfake' https://api.example.com/v1/items; the "
    "admin password is Hunter2-fake! and AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY"
    "EXAMPLEKEY"
)
_SHORT = ("ok", "3 passed in 0.41s", "fatal: not a git repository", "Done in 2.1s.", "exit 1")
LONG_LINES = (_CODE, _SHELL, _LOG, _PROSE, _JSON, _CODE, _SHELL, _LOG, _PROSE, _WITH_SECRET)


def lines(count: int) -> list[str]:
    """``count`` lines, long and short alternating, each long one made distinct."""
    out: list[str] = []
    for index in range(count):
        if index % 2:
            out.append(f"{_SHORT[index % len(_SHORT)]} [{index}]")
        else:
            out.append(f"{LONG_LINES[(index // 2) % len(LONG_LINES)]} #{index}")
    return out


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _seconds(texts: list[str], redact: Callable[[str], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        for text in texts:
            redact(text)
        times.append(time.process_time() - start)
    return statistics.median(times)


def figures(count: int = 2000, rounds: int = 3) -> dict[str, float]:
    """µs per line and MB/s with hints and with every format over every text."""
    texts = lines(count)
    size = sum(len(text.encode()) for text in texts)

    def redact(text: str) -> object:
        return secrets.redact_credentials(text, _marker)

    redact(texts[0])  # build the formats before timing
    hinted = _seconds(texts, redact, rounds)
    unhinted = tuple(dataclasses.replace(fmt, hints=()) for fmt in secrets._all_formats())
    with mock.patch.object(secrets, "_all_formats", return_value=unhinted):
        every = _seconds(texts, redact, rounds)
    return {
        "lines": float(count),
        "hinted_us": hinted / count * 1e6,
        "hinted_mbs": size / hinted / 1e6,
        "every_us": every / count * 1e6,
        "every_mbs": size / every / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    found = figures(args.lines, args.rounds)
    print(
        f"{int(found['lines'])} lines: {found['hinted_us']:.1f} µs/line "
        f"({found['hinted_mbs']:.2f} MB/s) with hints; every format over every text "
        f"{found['every_us']:.1f} µs/line ({found['every_mbs']:.2f} MB/s); "
        f"ratio {found['every_us'] / found['hinted_us']:.2f}x"
    )


if __name__ == "__main__":
    main()
