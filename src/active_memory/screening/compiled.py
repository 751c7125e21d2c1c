"""Patterns compiled on first use, once a process.

``re.compile`` runs a parser and a code generator written in Python: the screen's formats and
detectors cost tens of milliseconds of CPU to compile, which every process that screens paid at
import or on its first card (``benchmarks/screening_first_use.py``). Most texts hold none of
most patterns' hints (the literals one of which every match holds), so a pattern kept as its
source and compiled here the first time a text may match it is, for most processes, never
compiled. ``re``'s own cache is bounded and shared with every other caller, so it may drop a
pattern and compile it again; this one keeps each for the life of the process (the screen's
sources are a fixed set).
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["compiled"]


@cache
def compiled(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)``, compiled on the first call only."""
    return re.compile(source, flags)
