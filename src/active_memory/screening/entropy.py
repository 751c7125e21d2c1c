"""The one heuristic admission adds that is not a format: a long random-looking run
(``high_entropy``). Evidence keeps such strings (lesson ids, hashes and ULIDs there must stay
readable), so only the card screen uses it: :func:`active_memory.screening.secrets.find_secret`,
and the verdict once a text holds no credential format (``screening.verdict``)."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

__all__ = ["high_entropy", "mixed", "shannon_entropy"]

_TOKENISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def mixed(value: str) -> bool:
    """Whether ``value`` mixes digits with letters."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (0.0 for an empty string)."""
    if not text:
        return 0.0
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _random_looking(segment: str) -> bool:
    # Names read as words (getUserById, transcript_v2): several letters per camel-case word and
    # few letter/digit switches. Random base62/base64 has short "words" or frequent switches.
    words = _WORD.findall(segment)
    mean_word = sum(map(len, words)) / max(1, len(words))
    switches = sum(1 for a, b in itertools.pairwise(segment) if a.isdigit() != b.isdigit())
    return mean_word < 3.0 or switches >= 0.2 * len(segment)


def high_entropy(text: str) -> bool:
    """Whether ``text`` holds a run of 32 or more key characters that reads as random."""
    for match in _TOKENISH.finditer(text):
        token = match.group(0)
        core = re.sub(r"[^A-Za-z0-9]", "", token)
        # Hex (commit ids, sha256, UUIDs) tops out at 4.0 bits per character, so it never
        # qualifies; random base62/base64 of this length sits well above.
        if not mixed(token) or shannon_entropy(core) <= 4.0:
            continue
        # Paths and snake_case names split into short parts; a key keeps a long random run.
        longest = max(re.split(r"[/_.+=-]", token), key=len)
        if len(longest) >= 16 and _random_looking(longest):
            return True
    return False
