"""Rewrite ``screening/detector_hints.json`` and ``screening/detector_words.json`` from the
instruction detectors' patterns,
``screening/detect_secrets_patterns.json`` from the installed detect-secrets plugins,
``screening/phrases.json`` from ``screening/phrases.toml`` and ``screening/anchor_leads.json``
from the phrase anchors those tables make.

Run from the repository root after editing a detector's pattern, a phrase table or upgrading
detect-secrets:
``PYTHONPATH=src python tests/screening/rewrite_detector_hints.py``. The screens are right
without it (an unknown pattern is parsed, another release's plugins are imported, at run time);
the tests of each file fail until it is rewritten.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from active_memory.screening import (
    anchor_leads,
    detector_hints,
    detector_words,
    detectors,
    instructions,
    languages,
    phrases,
)


def main() -> None:
    sources = instructions._SOURCES
    table = detector_hints.derive([re.compile(source) for _, source, _ in sources])
    target = Path(detector_hints.__file__).with_name(detector_hints.FILE_NAME)
    target.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(table)} detectors' hints to {target}")
    words = detector_words.derive([source for _, source, _ in sources])
    target = target.with_name(detector_words.FILE_NAME)
    target.write_text(json.dumps(words, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(words)} detectors' words to {target}")
    patterns = detectors.patterns_table(detectors.live_patterns())
    target = target.with_name(detectors.PATTERNS_FILE)
    target.write_text(json.dumps(patterns, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(patterns['patterns'])} detect-secrets patterns to {target}")
    tables = phrases.mirror(target.with_name(phrases.TABLES).read_text(encoding="utf-8"))
    target = target.with_name(phrases.MIRROR)
    target.write_text(json.dumps(tables, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(tables['tables'])} languages' phrase tables to {target}")
    phrases.languages.cache_clear()  # the anchors of the tables just written
    languages._anchor_source.cache_clear()
    leads = anchor_leads.derive(languages._anchor_source(True))
    target = target.with_name(anchor_leads.FILE_NAME)
    target.write_text(json.dumps(leads, indent=1) + "\n", encoding="utf-8")
    print(f"wrote the phrase anchors' {len(leads['leads'])} leads to {target}")


if __name__ == "__main__":
    main()
