"""Strong and weak signals: what refuses a card and what only quarantines it.

Every screen reports ``stage:code`` tokens (``secret:github_token``, ``personal:email``,
``injection:override_instructions``). Most are strong: a credential format, an e-mail address
or a person's home folder, a planted instruction, a frame tag; the card is refused. A few are
weak (:data:`WEAK_SIGNALS`): a random-looking string that may be a hash, a number shaped like a
phone number, a download that is not run, a credential file read without a destination, a shell
start-up file, a word mixing scripts. A card whose only signals are weak is quarantined: not
published, kept with its evidence for a person to approve or reject (``active-memory lessons
review``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from active_memory.screening.entropy import high_entropy
from active_memory.screening.instructions import WEAK_KINDS, find_instructions
from active_memory.screening.normalise import decoded_texts
from active_memory.screening.personal import find_personal
from active_memory.screening.redaction_marks import find_redaction_mark
from active_memory.screening.secrets import find_credential

__all__ = ["WEAK_SIGNALS", "Screening", "is_weak", "screen_texts"]

WEAK_SIGNALS: frozenset[str] = frozenset(
    {"secret:high_entropy", "personal:phone", *(f"injection:{kind}" for kind in WEAK_KINDS)}
)


def is_weak(code: str) -> bool:
    """Whether ``stage:code`` only quarantines."""
    return code in WEAK_SIGNALS


@dataclass(frozen=True, slots=True)
class Screening:
    """The signals found, unique, strong ones first within each stage (secrets, personal data,
    then instructions)."""

    codes: tuple[str, ...] = ()

    @property
    def strong(self) -> tuple[str, ...]:
        return tuple(code for code in self.codes if not is_weak(code))

    @property
    def weak(self) -> tuple[str, ...]:
        return tuple(code for code in self.codes if is_weak(code))

    @property
    def refused(self) -> bool:
        return bool(self.strong)

    @property
    def quarantined(self) -> bool:
        return bool(self.codes) and not self.strong

    @property
    def outcome(self) -> str:
        """``refused``, ``quarantined`` or ``clean``."""
        if self.refused:
            return "refused"
        return "quarantined" if self.codes else "clean"


def _encoded_credential(text: str) -> str | None:
    """A credential format inside a base64, hex or percent-encoded run of ``text``: encoding a
    key hides it from the patterns, not from whoever decodes the card. Formats only: decoded
    bytes are often random by nature, so the entropy heuristic would misfire on them."""
    for decoded in decoded_texts(text).texts:
        kind = find_credential(decoded)
        if kind is not None:
            return kind
    return None


def _secret_codes(text: str) -> list[str]:
    kind = find_credential(text) or find_redaction_mark(text) or _encoded_credential(text)
    if kind is not None:
        return [f"secret:{kind}"]
    # What find_secret adds to find_credential, which found nothing here.
    return ["secret:high_entropy"] if high_entropy(text) else []


def _field_codes(text: str) -> tuple[str, ...]:
    return (*_secret_codes(text), *(f"personal:{kind}" for kind in find_personal(text)))


# The fields a batch repeats card after card (file paths, folders, references) are short, and
# so is what an edit leaves as it was (most edits of a lesson change its title or its
# recommendation, not both); a bounded memo screens each once rather than once per card: a
# batch of 1,500 cards naming the same 20 files took a tenth of the CPU. Every detector is a
# pure function of the text. Only short texts are kept (in process memory, never written), so
# each memo stays under about 2 MB whatever a batch holds.
_MEMO_LIMIT = 512
T = TypeVar("T")


def _short_texts_memoised(screen: Callable[[str], T]) -> Callable[[str], T]:
    """``screen``, its answers for texts of up to ``_MEMO_LIMIT`` characters kept in a bounded
    memo."""
    memo = lru_cache(maxsize=4096)(screen)

    def screened(text: str) -> T:
        return memo(text) if len(text) <= _MEMO_LIMIT else screen(text)

    return screened


# The secret and personal-data codes of one text (secrets first), in finding order; the
# instruction kinds of a card text; the credential format of an identifier.
_text_codes = _short_texts_memoised(_field_codes)
_instruction_kinds = _short_texts_memoised(find_instructions)
_credential_kind = _short_texts_memoised(find_credential)


def screen_texts(
    card: Iterable[str], others: Iterable[str] = (), identifiers: Iterable[str] = ()
) -> Screening:
    """Screen ``card`` (the text agents are shown: secrets, personal data and instructions),
    ``others`` (reason, references, associations: secrets and personal data, since the store
    keeps them too) and ``identifiers`` (run and node ids: credential formats only, since they
    may be random by design)."""
    card = tuple(card)
    secrets: list[str] = []
    personal: list[str] = []
    for text in (*card, *others):
        for code in _text_codes(text):
            (secrets if code.startswith("secret:") else personal).append(code)
    for text in identifiers:  # a batch's cards share their run id
        kind = _credential_kind(text)
        if kind:
            secrets.append(f"secret:{kind}")
    instructions = [f"injection:{kind}" for text in card for kind in _instruction_kinds(text)]
    ordered = [
        code
        for codes in (secrets, personal, instructions)
        for code in sorted(dict.fromkeys(codes), key=is_weak)
    ]
    return Screening(tuple(ordered))
