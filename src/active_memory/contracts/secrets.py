"""Credential detection for lesson text.

Lessons are injected into future agents' contexts and kept in the store, so admission is strict:
any match is a rejection (there is no redaction here; a card with a secret is simply refused).
Every detector looks for a *format*, never for a word alone, to keep ordinary engineering advice
("pass the token through the TOKEN env var") out of its net. Patterns anchor on a boundary and
bound their gaps, so scanning a hostile 256 KiB answer stays linear.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable

__all__ = ["SECRET_KINDS", "find_secret", "shannon_entropy"]

_NOT_KEY_CHAR = r"(?<![A-Za-z0-9_-])"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY-----"
                               r"|PuTTY-User-Key-File")),
    ("anthropic_key", re.compile(_NOT_KEY_CHAR + r"sk-ant-[A-Za-z0-9_-]{16,}")),
    ("openai_key", re.compile(_NOT_KEY_CHAR + r"sk-(?!ant-)[A-Za-z0-9_-]{20,}")),
    ("aws_access_key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)"
                                  r"[A-Z0-9]{16}(?![A-Z0-9])")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}"
                                r"|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}")),
    ("service_token", re.compile(r"(?<![A-Za-z0-9_-])(?:(?:glpat-|pypi-)[A-Za-z0-9_-]{20,}"
                                 r"|(?:npm_|hf_|[sr]k_(?:live|test)_)[A-Za-z0-9]{20,}(?![_-]))")),
    ("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
                       r"\.[A-Za-z0-9_-]{8,}")),
    ("url_credentials", re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://"
                                   r"[^/\s:@]{1,256}:[^/\s@]{1,256}@")),
)  # fmt: skip

_BEARER = re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)")
# A credential-looking name directly assigned a value: password=..., API_KEY: "...".
_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9_])[A-Za-z0-9_]{0,64}?"
    r"(?:password|passwd|pwd|secret|api_?key|access_?key|auth_?token|token|credentials?)"
    r"\s*[:=]\s*(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;)]+)"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\{\{[^}]*\}\}|%[^%]+%|[*x.]+"
    r"|(?:your|my|some|dummy|fake|example|placeholder|redacted|changeme|none|null|true|false)"
    r"[-_a-z]*|\.\.\.|…)$"
)
# Code that computes a value (settings.TOKEN, os.environ["X"], get_token()) is not a literal.
_EXPRESSION = re.compile(r"[.(\[]")
_TOKENISH = re.compile(r"[A-Za-z0-9+/_=-]{32,}")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")

SECRET_KINDS: tuple[str, ...] = (
    *(kind for kind, _ in _PATTERNS),
    "bearer_token",
    "password_assignment",
    "high_entropy",
)


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (0.0 for an empty string)."""
    if not text:
        return 0.0
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _bearer(text: str) -> bool:
    return any(_mixed(m.group(1)) for m in _BEARER.finditer(text))


def _assignment(text: str) -> bool:
    for match in _ASSIGNMENT.finditer(text):
        raw = match.group("value")
        quoted = raw[:1] in "\"'"
        value = raw[1:-1] if quoted else raw.rstrip(".:")
        if len(value) < 6 or any(c.isspace() for c in value) or _PLACEHOLDER.match(value):
            continue
        if quoted:
            # A quoted literal is a value, unless it is a short plain word ("string", "Bearer").
            if _mixed(value) or not value.isalnum() or len(value) >= 16:
                return True
        # Unquoted, only a value mixing letters and digits reads as a literal password; a bare
        # word (token: required) or an expression (token=settings.TOKEN) is configuration talk.
        elif _mixed(value) and not _EXPRESSION.search(value):
            return True
    return False


def _random_looking(segment: str) -> bool:
    # Names read as words (getUserById, transcript_v2): several letters per camel-case word and
    # few letter/digit switches. Random base62/base64 has short "words" or frequent switches.
    words = _WORD.findall(segment)
    mean_word = sum(map(len, words)) / max(1, len(words))
    switches = sum(1 for a, b in itertools.pairwise(segment) if a.isdigit() != b.isdigit())
    return mean_word < 3.0 or switches >= 0.2 * len(segment)


def _high_entropy(text: str) -> bool:
    for match in _TOKENISH.finditer(text):
        token = match.group(0)
        core = re.sub(r"[^A-Za-z0-9]", "", token)
        # Hex (commit ids, sha256, UUIDs) tops out at 4.0 bits per character, so it never
        # qualifies; random base62/base64 of this length sits well above.
        if not _mixed(token) or shannon_entropy(core) <= 4.0:
            continue
        # Paths and snake_case names split into short parts; a key keeps a long random run.
        longest = max(re.split(r"[/_.+=-]", token), key=len)
        if len(longest) >= 16 and _random_looking(longest):
            return True
    return False


_FUNCTIONS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("bearer_token", _bearer),
    ("password_assignment", _assignment),
    ("high_entropy", _high_entropy),
)


def find_secret(text: str) -> str | None:
    """The kind of the first credential format found in ``text`` (see SECRET_KINDS), or None."""
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    for kind, check in _FUNCTIONS:
        if check(text):
            return kind
    return None
