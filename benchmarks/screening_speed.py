"""Screening speed: what ``active-memory contracts screen`` costs on one card.

``admission.preview.preview_card`` runs the card rules and every screen (secrets, planted
instructions in every view of the text: folded, leetspeak, letter-spacing, markup, other
languages, decoded base64/hex/percent runs). Two cards of a full 640-byte recommendation:

* a realistic one: ordinary advice naming files, commands and identifiers;
* a hostile one: every run a decoder would try (base64, hex, ``\\x`` escapes, percent
  encoding), leetspeak, letter-spacing and markup, none of it planted text.

    python benchmarks/screening_speed.py            # medians, target at most 5 ms each
    python benchmarks/screening_speed.py --rounds 50

Then redaction's rate over 1 MB of those cards' text, with the detect-secrets formats' literal
hints (``screening.required_literals``) and without them, as a ratio in the same run.

Exit 1 when a median is over the target.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import sys
import time
from unittest import mock

from active_memory.admission.preview import preview_card
from active_memory.screening import secrets

TARGET_MS = 5.0
TITLE = "Run the migration tests against a fresh SQLite file"


def _fill(text: str, size: int = 640) -> str:
    """``text`` repeated and cut to ``size`` bytes (ASCII), ending on full stops."""
    repeated = (text + " ") * (size // len(text) + 1)
    cut = repeated[: size - 1].rstrip()
    return cut + "." * (size - len(cut))


REALISTIC = _fill(
    "Before changing src/store/migrations.py run pytest tests/store -n 0 -q against a fresh "
    "database file (STATE_DIR=$(mktemp -d)); the m007_history migration rewrites the history "
    "table, so check that revision numbers survive with sqlite3 lessons.sqlite3 'select id, "
    "revision from history'. Keep the busy timeout at 5 s: the CI runner is slow and a lower "
    "value made test_concurrent_publication flaky. Use RepositoryScope.files for exact paths "
    "and keyword_groups for topics; the recall index scores exact files first."
)
assert len(REALISTIC.encode()) == 640
HOSTILE = _fill(
    "Fixtures: aGVsbG8gd29ybGQgZnJvbSB0aGUgZml4dHVyZQ== and "
    "\\x68\\x65\\x6c\\x6c\\x6f\\x20\\x77\\x6f\\x72\\x6c\\x64 and 68656c6c6f20776f726c6421 and "
    "0x68 0x65 0x6c 0x6c 0x6f 0x21 and hello%20world%20from%20the%20fixture and "
    "c0ld c4ch3 h1ts 4r3 sl0w; t a b l e  l a y o u t; <!-- generated -->; "
    "[the docs](https://example.com/docs) sha 3f786850e387550fdab836ed7e6dc881de23001b "
    "Y29uZmlnIGxvYWRlZCBmcm9tIGRpc2sgaW4gMTIgbXM="
)
assert len(HOSTILE.encode()) == 640


def timings_ms(recommendation: str, rounds: int) -> list[float]:
    preview_card(TITLE, recommendation)  # warm: compiled patterns, caches
    times: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        preview_card(TITLE, recommendation)
        times.append((time.perf_counter() - start) * 1000)
    return times


def redaction_figures(rounds: int = 3) -> dict[str, float]:
    """Median MB/s of ``redact_credentials`` over 1 MB of both cards' text, with the
    detect-secrets formats' literal hints and without them (every format run over every text,
    as before the hints), interleaved, in CPU time."""
    text = ((REALISTIC + " " + HOSTILE + " ") * 800)[:1_000_000]
    unhinted = tuple(dataclasses.replace(fmt, hints=()) if fmt.numbered else fmt
                     for fmt in secrets._all_formats())  # fmt: skip
    samples: dict[str, list[float]] = {"hinted": [], "unhinted": []}
    for _ in range(rounds):
        for name in samples:
            formats = mock.patch.object(secrets, "_all_formats", return_value=unhinted)
            with formats if name == "unhinted" else contextlib.nullcontext():
                started = time.process_time()
                secrets.redact_credentials(text, lambda kind: f"[REDACTED:{kind}]")
                samples[name].append(len(text) / 1e6 / (time.process_time() - started))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="timed calls per card")
    args = parser.parse_args()
    within = True
    for label, text in (("realistic", REALISTIC), ("hostile", HOSTILE)):
        times = timings_ms(text, args.rounds)
        median = statistics.median(times)
        within = within and median <= TARGET_MS
        codes = ",".join(preview_card(TITLE, text).codes) or "clean"
        # The best run is the cost without a busy machine's noise; the target is on the median.
        print(
            f"preview_card {label:<9} 640 B: median {median:.2f} ms, best {min(times):.2f} ms "
            f"(target at most {TARGET_MS:.0f} ms median; {codes})"
        )
    rates = redaction_figures()
    print(
        f"redact_credentials over 1 MB: {rates['hinted']:.2f} MB/s with literal hints, "
        f"{rates['unhinted']:.2f} MB/s without ({rates['hinted'] / rates['unhinted']:.2f}x)"
    )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
