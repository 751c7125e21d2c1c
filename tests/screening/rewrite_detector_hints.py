"""Rewrite ``screening/detector_hints.json`` from the instruction detectors' patterns,
``screening/detect_secrets_patterns.json`` from the installed detect-secrets plugins and
``screening/phrases.json`` from ``screening/phrases.toml``.

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

from active_memory.screening import detector_hints, detectors, instructions, phrases


def main() -> None:
    sources = instructions._SOURCES
    table = detector_hints.derive([re.compile(source) for _, source, _ in sources])
    target = Path(detector_hints.__file__).with_name(detector_hints.FILE_NAME)
    target.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(table)} detectors' hints to {target}")
    patterns = detectors.patterns_table(detectors.live_patterns())
    target = target.with_name(detectors.PATTERNS_FILE)
    target.write_text(json.dumps(patterns, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(patterns['patterns'])} detect-secrets patterns to {target}")
    tables = phrases.mirror(target.with_name(phrases.TABLES).read_text(encoding="utf-8"))
    target = target.with_name(phrases.MIRROR)
    target.write_text(json.dumps(tables, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(tables['tables'])} languages' phrase tables to {target}")


if __name__ == "__main__":
    main()
