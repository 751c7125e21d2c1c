"""Rewrite ``screening/detector_hints.json`` from the instruction detectors' patterns.

Run from the repository root after editing a detector's pattern:
``PYTHONPATH=src python tests/screening/rewrite_detector_hints.py``. The screen is right without
it (an unknown pattern is parsed at run time); the hints test fails until the file is rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path

from active_memory.screening import detector_hints, instructions


def main() -> None:
    table = detector_hints.derive([pattern for _, pattern, _ in instructions._DETECTORS])
    target = Path(detector_hints.__file__).with_name(detector_hints.FILE_NAME)
    target.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(table)} detectors' hints to {target}")


if __name__ == "__main__":
    main()
