"""Secret detection and redaction, in one place for evidence and admission alike.

Two rules. Keys that name a secret (token, secret, password, api key, authorization, credential,
private key; any case, camelCase, snake_case or kebab-case, at any depth) have their whole value
replaced by ``[redacted]``. Strings that look like a credential in a common format (provider API
keys, cloud access keys, forge tokens, chat tokens, PEM private keys, bearer headers, JWTs,
``NAME_TOKEN=value`` assignments) are replaced wherever they occur by ``[redacted:<kind>]``.

The patterns err on the side of redacting: evidence that loses a harmless string is cheaper than
a credential that reaches a model or a lesson.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_PATTERNS",
    "find_secrets",
    "is_secret_key",
    "redact_text",
    "redact_value",
]

REDACTED = "[redacted]"

# Ordered: the more specific kind wins where two could match the same text.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"
        ),
    ),
    (
        # The end of a key whose beginning was cut away (e.g. an excerpt's tail).
        "private-key",
        re.compile(r"\A[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer", re.compile(r"\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{16,}")),
    (
        "url-credentials",
        re.compile(r"(?<=://)[^\s:/@]+:[^\s:/@]{3,}(?=@)"),
    ),
    (
        # NAME_TOKEN=value, "password": "value", api-key: value … only the value is replaced.
        "assignment",
        re.compile(
            r"(?i)(?:token(?!s)|secret|passw(?:or)?d|api[_-]?key|apikey|credential"
            r"|private[_-]?key|authorization)[A-Za-z0-9_.-]{0,40}"
            r"[\"']?\s*[:=]\s*[\"']?(?P<value>(?!\[redacted)[^\s\"',;]{8,})"
        ),
    ),
)

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
    """The kinds of credential found in ``text``, unique, in pattern order (empty: none).

    Each match is consumed before the next pattern looks, so ``sk-ant-…`` is one
    ``anthropic-key``, not also an ``openai-key``.
    """
    kinds: list[str] = []
    for kind, pattern in SECRET_PATTERNS:
        text, count = pattern.subn(_replace(kind), text)
        if count and kind not in kinds:
            kinds.append(kind)
    return kinds


def _replace(kind: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        if kind == "assignment":
            start, end = match.span("value")
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + f"[redacted:{kind}]" + whole[end - offset :]
        return f"[redacted:{kind}]"

    return replace


def redact_text(text: str) -> str:
    """``text`` with every credential-looking string replaced by ``[redacted:<kind>]``."""
    for kind, pattern in SECRET_PATTERNS:
        text = pattern.sub(_replace(kind), text)
    return text


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
