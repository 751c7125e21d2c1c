"""Rewrite ``screening/detector_hints.json`` from the instruction detectors' patterns, and
``screening/detect_secrets_patterns.json`` from the installed detect-secrets plugins.

Run from the repository root after editing a detector's pattern or upgrading detect-secrets:
``PYTHONPATH=src python tests/screening/rewrite_detector_hints.py``. The screens are right
without it (an unknown pattern is parsed, another release's plugins are imported, at run time);
the tests of both files fail until they are rewritten.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from active_memory.screening import detector_hints, detectors, instructions


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


if __name__ == "__main__":
    main()
