"""Secret redaction for evidence: credential formats in text, secret-named keys in values.

Two rules. Keys that name a secret (token, secret, password, api key, authorization, credential,
private key; any case, camelCase, snake_case or kebab-case, at any depth) have their whole value
replaced by ``[redacted]``. Strings in a credential format (provider API keys, cloud access keys,
forge, registry and chat tokens, PEM and PuTTY private keys, bearer headers, JWTs, URL
passwords, ``NAME_TOKEN=value`` assignments) are replaced wherever they occur by
``[redacted:<kind>]``.

The formats are not defined here: they are :mod:`active_memory.screening.secrets`, the same
list admission refuses cards with and provider recordings are scrubbed with, so every format
admission knows is also kept from the model. Redaction errs on the side of redacting: evidence
that loses a harmless string is cheaper than a credential that reaches a model or a lesson.
Admission's ``high_entropy`` heuristic is not applied here, because lesson ids, hashes and ULIDs
in evidence must stay readable.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

from active_memory.screening.redaction_marks import redaction_mark
from active_memory.screening.secrets import redact_credentials

__all__ = [
    "REDACTED",
    "RedactionMemo",
    "find_secrets",
    "is_secret_key",
    "redact_text",
    "redact_value",
]

REDACTED = "[redacted]"

_SECRET_WORDS = frozenset(
    {
        "token", "secret", "secrets", "password", "passwd", "passphrase", "apikey",
        "authorization", "credential", "credentials", "privatekey", "cookie",
    }
)  # fmt: skip
_SECRET_PAIRS = frozenset({("api", "key"), ("private", "key"), ("access", "key"), ("auth", "key")})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a secret: ``GITHUB_TOKEN``, ``apiKey``, ``x-api-key``…

    Counts such as ``max_tokens`` or ``nodeInjectionTokens`` are not secrets.
    """
    words = [word.lower() for word in _WORD.findall(name)]
    if any(word in _SECRET_WORDS for word in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in pairwise(words))


def find_secrets(text: str) -> list[str]:
    """The kinds of credential :func:`redact_text` would replace in ``text``, unique, in format
    order (empty: none), spelled as in the markers (``github-token``).

    Each match is consumed before the next format looks, so ``sk-ant-…`` is one
    ``anthropic-key``, not also an ``openai-key``.
    """
    _, kinds = redact_credentials(text, redaction_mark)
    return [kind.replace("_", "-") for kind in kinds]


class RedactionMemo:
    """Texts a scan (marking with ``marker``) found no credential in, least recently used
    dropped first once the texts held (and what holding each costs) pass ``max_chars``. A text
    with a credential is never held: a library caller's long-lived process would otherwise keep
    the raw secret in memory after the build that met it; such texts are rare, so scanning them
    again costs little. With ``by_digest`` (replay's scrubbing, whose requests repeat such texts
    turn after turn) every text's redaction is held instead, under the text's sha256, which
    keeps no raw secret either.

    Redaction reads about a megabyte a second, and a build meets the same text several times:
    a record in its excerpt and again in its complete copy, a tool's name on every call, and
    each specialist of a run builds its own evidence from the same transcripts (in threads of
    one process, hence the lock), which for a run of up to a few MiB is still held. The result
    depends on the text and the marker alone, so a held one is the one a new scan would give.
    """

    def __init__(
        self,
        max_chars: int,
        marker: Callable[[str], str] = redaction_mark,
        *,
        by_digest: bool = False,
    ) -> None:
        self._max_chars = max_chars
        self._marker = marker
        self._by_digest = by_digest
        self._items: OrderedDict[str | bytes, str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def redact(self, text: str) -> str:
        key: str | bytes = text
        if self._by_digest:
            key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            held = self._items.get(key)
            if held is not None:
                self._items.move_to_end(key)
                return held
        redacted, _ = redact_credentials(text, self._marker)
        if redacted is not text and not self._by_digest:
            return redacted  # it held a credential: not kept
        size = _held_size(redacted)
        if size * 16 > self._max_chars:
            return redacted  # over a sixteenth of the memo it would push out many: not held
        with self._lock:
            if key not in self._items:
                self._items[key] = redacted
                self._chars += size
                while self._chars > self._max_chars:
                    _, old = self._items.popitem(last=False)
                    self._chars -= _held_size(old)
        return redacted

    def held(self) -> list[str]:
        """The texts held (with ``by_digest``, the redactions), least recently used first."""
        with self._lock:
            return list(self._items.values())


# What holding a text costs beyond its characters, counted as characters (a byte each for ASCII):
# the string's header and the memo's slot and link for it, about 160 bytes (measured with
# tracemalloc). Without it a memo of short texts (a file's lines, read one at a time by a
# specialist's tools) held ten times its characters in memory.
_ENTRY_CHARS = 160


def _held_size(text: str) -> int:
    # A text held is its own redaction (no credential): the same string, held once.
    return len(text) + _ENTRY_CHARS


# 2 Mi characters (a few MiB at most, next to a build's peak of about 9): a text of over 128 Ki is
# never held.
_MEMO = RedactionMemo(2 * 1024 * 1024)


def redact_text(text: str) -> str:
    """``text`` with every credential-looking string replaced by ``[redacted:<kind>]``."""
    return _MEMO.redact(text)


def redact_value(value: Any, *, keys: bool = True) -> Any:
    """A deep copy of JSON ``value`` with secrets redacted.

    With ``keys`` (the default), values under secret-named keys become ``[redacted]`` whatever
    their type; every string is also passed through :func:`redact_text`.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            str(key): REDACTED
            if keys and is_secret_key(str(key)) and item is not None
            else redact_value(item, keys=keys)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_value(item, keys=keys) for item in value]
    return value
