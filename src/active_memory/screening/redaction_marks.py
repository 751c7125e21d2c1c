"""Redaction marks in an answer: the place where a credential stood before it was scrubbed.

Evidence shows a model ``[redacted:github-token]`` where a credential was, and a recording of a
model's answers keeps the same mark where the answer itself held one. An answer that carries
such a mark into a card is passing on a credential it saw (or wrote), so the screen treats the
mark as the credential: ``[redacted:github-token]`` is ``secret:github_token``, exactly the code
the live answer got. Without this, replaying a recorded answer admitted the card that the live
run refused, and a baseline comparison called the change harmless.

A bare ``[redacted]`` (a value under a secret-named key) names no kind and is ordinary prose in
advice about logs, so it is not a mark here.
"""

from __future__ import annotations

import re

from active_memory.screening.secrets import SECRET_KINDS, detected_kinds

__all__ = ["find_redaction_mark", "redaction_mark"]

# Kinds are spelled with hyphens in marks (evidence has always written them so), with
# underscores in codes.
_MARK = re.compile(r"\[redacted:([A-Za-z0-9_-]{1,64})\]", re.IGNORECASE)


def redaction_mark(kind: str) -> str:
    """The mark that stands for a credential of ``kind`` (``github_token``)."""
    return f"[redacted:{kind.replace('_', '-')}]"


def find_redaction_mark(text: str) -> str | None:
    """The credential kind of the first redaction mark in ``text`` (``github_token``), or
    ``redacted`` for a mark whose kind is not one the screens know; None: no mark."""
    match = _MARK.search(text)
    if match is None:
        return None
    kind = match.group(1).lower().replace("-", "_")
    return kind if kind in SECRET_KINDS or kind in detected_kinds() else "redacted"
