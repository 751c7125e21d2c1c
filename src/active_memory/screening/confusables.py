"""Confusable folding: text as a reader sees it, before instruction patterns look at it.

``ignore previous instructions`` written with Cyrillic ``о`` and ``е``, with a Greek ``ι``,
in full-width or mathematical letters, or split by a zero-width joiner, reads the same to a
model as the ASCII sentence; the patterns must see it the same way too. :func:`fold`:

1. drops format and control characters (:func:`~active_memory.screening.frame.strip_invisible`),
2. applies NFKC (compatibility forms: full-width, ligatures, mathematical letters),
3. maps every remaining confusable to its Latin prototype with the Unicode TR39 confusables
   table, as shipped and maintained by the ``disarm`` package (Unicode 17). Only characters
   outside ASCII are mapped: the skeleton's own ASCII rows (``m`` to ``rn``, ``I`` and ``1`` to
   ``l``, ``0`` to ``O``) would corrupt ordinary words and numbers the patterns match,
4. reads look-alike angle brackets as ``<`` and ``>`` (:data:`~active_memory.screening.frame`),
5. collapses whitespace and folds case.

:func:`mixed_script` tells whether a word mixes ASCII letters with letters of another script
that fold to ASCII (``pаypal``): a sign of spoofing even when no pattern matches the folded
text. Whole words in another script (``Москва``, ``λόγος``) are not mixed, and neither are
Latin letters with marks that TR39 reads as their base letter (``instruções``, ``dosyaları``,
``haseł``): those are ordinary words of Portuguese, Turkish or Polish.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from active_memory.screening.frame import CLOSERS, OPENERS, strip_invisible

__all__ = ["fold", "mixed_script"]

_BRACKETS = str.maketrans({**dict.fromkeys(OPENERS, "<"), **dict.fromkeys(CLOSERS, ">")})
_WORDS = re.compile(r"[^\W\d_]{2,}")


@lru_cache(maxsize=4096)
def _latin(char: str) -> str:
    # Imported on the first character outside ASCII: loading disarm costs about 10 ms of CPU
    # (27 ms where nothing has loaded importlib.metadata yet), and most texts are ASCII.
    from disarm import normalize_confusables

    return normalize_confusables(char)


def _confusables(text: str) -> str:
    if text.isascii():
        return text
    # Character by character, ASCII untouched: the table's ASCII rows are never applied.
    return "".join(char if char.isascii() else _latin(char) for char in text)


def fold(text: str) -> str:
    """``text`` with invisible characters gone, NFKC, confusables read as Latin, look-alike
    brackets read as ``<``/``>``, whitespace collapsed and case folded."""
    folded = unicodedata.normalize("NFKC", strip_invisible(text))
    folded = _confusables(folded).translate(_BRACKETS)
    return re.sub(r"\s+", " ", folded).strip().casefold()


def mixed_script(text: str) -> bool:
    """Whether some word mixes ASCII letters with look-alike letters of another script."""
    flat = unicodedata.normalize("NFKC", strip_invisible(text))
    if flat.isascii():
        return False
    for match in _WORDS.finditer(flat):
        word = match.group(0)
        if word.isascii() or not any(char.isascii() for char in word):
            continue
        for char in word:
            if char.isascii() or _latin_letter(char):
                continue  # Turkish ı, Portuguese ç, Polish ł: one script, Latin
            if _latin(char).isascii() and _latin(char).isalpha():
                return True
    return False


@lru_cache(maxsize=1024)
def _latin_letter(char: str) -> bool:
    return unicodedata.name(char, "").startswith("LATIN ")
