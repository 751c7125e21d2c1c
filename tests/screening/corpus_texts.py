"""The card texts of the screening corpus (every title and recommendation of every item, good and
bad), for the tests that hold a fast path's findings equal to the long way's over all of them."""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
CARD_TEXTS = [
    text
    for path in sorted(CORPUS.glob("*.jsonl"))
    for line in path.read_text(encoding="utf-8").splitlines()
    if line.strip()
    for key, text in json.loads(line).items()
    if key in ("title", "recommendation") and isinstance(text, str)
]
