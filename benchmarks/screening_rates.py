"""Screening rates over the test corpus: how much bad card text is caught, how much good passes.

Each corpus line is a card's title and/or recommendation with the family it stands for
(``tests/screening/corpus/bad*.jsonl``, one file a topic: secrets, planted instructions, frame
look-alikes, positions, card limits; ``good*.jsonl``: ordinary advice using the same words).
Every item goes through what admission applies to card text (``admission.preview.preview_card``:
the card rules and the screens) and lands in one of three outcomes: refused, quarantined or clean.

    python benchmarks/screening_rates.py            # rates per family and in total
    python benchmarks/screening_rates.py --misses   # also list the items on the wrong side

Targets: every bad item refused or quarantined, no good item refused. Exit 1 when
a target is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from active_memory.admission.preview import preview_card

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "screening" / "corpus"
BAD_TARGET = 1.0


def load(side: str) -> list[dict[str, str]]:
    """Every item of ``side`` (``bad`` or ``good``), from each of its topic files."""
    return [
        json.loads(line)
        for path in sorted(CORPUS.glob(f"{side}*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def outcome(item: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    screening = preview_card(item.get("title"), item.get("recommendation"))
    return screening.outcome, screening.codes


def _table(items: list[dict[str, str]]) -> dict[str, Counter[str]]:
    by_family: dict[str, Counter[str]] = defaultdict(Counter)
    for item in items:
        result, _ = outcome(item)
        by_family[item["family"]][result] += 1
    return by_family


def _print(label: str, table: dict[str, Counter[str]]) -> Counter[str]:
    total: Counter[str] = Counter()
    print(f"{label:<22} {'items':>5} {'refused':>8} {'quarant.':>8} {'clean':>6}")
    for family in sorted(table):
        counts = table[family]
        total.update(counts)
        n = sum(counts.values())
        print(
            f"  {family:<20} {n:>5} {counts['refused']:>8} {counts['quarantined']:>8} "
            f"{counts['clean']:>6}"
        )
    n = sum(total.values())
    print(
        f"  {'total':<20} {n:>5} {total['refused']:>8} {total['quarantined']:>8} "
        f"{total['clean']:>6}"
    )
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list items on the wrong side")
    args = parser.parse_args()
    bad, good = load("bad"), load("good")
    bad_total = _print("bad", _table(bad))
    good_total = _print("good", _table(good))
    caught = (bad_total["refused"] + bad_total["quarantined"]) / max(1, len(bad))
    print(f"bad refused or quarantined: {caught:.1%} ({len(bad)} items, target {BAD_TARGET:.0%})")
    print(f"bad refused outright:       {bad_total['refused'] / max(1, len(bad)):.1%}")
    print(f"good refused:               {good_total['refused']} of {len(good)} (target 0)")
    print(f"good quarantined:           {good_total['quarantined']} of {len(good)}")
    # Items added after the original corpus say where they came from (a reviewer's findings,
    # items written before they were first run): their rates, apart.
    for origin in sorted({item["origin"] for item in bad + good if "origin" in item}):
        mine_bad = [outcome(item)[0] for item in bad if item.get("origin") == origin]
        mine_good = [outcome(item)[0] for item in good if item.get("origin") == origin]
        held = sum(result != "clean" for result in mine_bad)
        print(
            f"  origin {origin}: bad caught {held} of {len(mine_bad)}, good refused "
            f"{mine_good.count('refused')} of {len(mine_good)}"
        )
    if args.misses:
        for item in bad:
            if outcome(item)[0] == "clean":
                print("missed bad:", json.dumps(item, ensure_ascii=True))
        for item in good:
            result, codes = outcome(item)
            if result != "clean":
                print(f"flagged good ({result} {','.join(codes)}):", json.dumps(item))
    return 0 if caught >= BAD_TARGET and good_total["refused"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
