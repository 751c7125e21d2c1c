"""Screening speed: what ``active-memory contracts screen`` costs on one card.

``admission.preview.preview_card`` runs the card rules and every screen (secrets, planted
instructions in every view of the text: folded, leetspeak, letter-spacing, markup, other
languages, decoded base64/hex/percent runs). Two cards of a full 640-byte recommendation:

* a realistic one: ordinary advice naming files, commands and identifiers;
* a hostile one: every run a decoder would try (base64, hex, ``\\x`` escapes, percent
  encoding), leetspeak, letter-spacing and markup, none of it planted text.

    python benchmarks/screening_speed.py            # medians, target at most 5 ms each
    python benchmarks/screening_speed.py --rounds 50

Exit 1 when a median is over the target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from active_memory.admission.preview import preview_card

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
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
