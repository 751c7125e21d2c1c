"""Credential formats: the one list admission, evidence redaction and provider recordings share.

Lessons are injected into future agents' contexts and kept in the store, so admission is strict:
any match is a rejection (:func:`find_secret`; a card with a secret is refused, never
redacted). Evidence sent to a provider and provider recordings written to disk are redacted with
the very same patterns (:func:`redact_credentials`), so a format admission knows never reaches a
model or a fixture in clear.

Every pattern looks for a *format*, never for a word alone, to keep ordinary engineering advice
("pass the token through the TOKEN env var") out of its net. Two formats are contextual (a
``Bearer`` header and a credential-named assignment): redaction takes every bearer token and
every credential-named value of 8 or more characters, erring on the side of losing a harmless
string, while admission flags only a value that reads as a literal credential (and, for an
assignment, only when the name ends with the credential word: ``DB_PASSWORD=``, not
``TOKEN_PATH=``). Anything admission flags, redaction replaces. Admission adds one heuristic
that is not a format, ``high_entropy``: evidence keeps such strings because lesson ids, hashes
and ULIDs there must stay readable.

The list has four layers, applied in this order everywhere: our own formats (below, each with
the context rules above), the maintained detect-secrets plugins
(:mod:`active_memory.screening.detectors`: mail, chat, payment and cloud providers we do not
spell out ourselves), and a password named in prose ("the admin password is Hunter2-fake!",
"log in as admin / Fake-Pass-42", "the database login is admin / Fake-2024!", "the admin
credentials are root:Fake-Pass-99", "pass: Fake-2024"), which counts only when the value reads
as a literal: it mixes letters with digits or symbols, and is neither a placeholder nor an
expression. Redaction takes the value's trailing punctuation too (``Hunter2Blue!`` may end in
its own ``!``); admission judges the value without it. Last come passwords on a command line
or in a client's environment (``mysql -p…``, ``PGPASSWORD=…``, ``curl -u user:…``) and named in
prose in other languages (:mod:`active_memory.screening.secret_forms`).

Patterns anchor on a boundary and bound their gaps, so scanning a hostile 256 KiB answer stays
linear.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial

from active_memory.screening.compiled import compiled
from active_memory.screening.detectors import plugin_sources
from active_memory.screening.entropy import high_entropy, mixed, shannon_entropy
from active_memory.screening.literal_scan import HintTable
from active_memory.screening.required_literals import case_fold
from active_memory.screening.secret_forms import FORMS, PLACEHOLDER as _PLACEHOLDER

__all__ = [
    "CREDENTIAL_KINDS",
    "SECRET_KINDS",
    "detected_kinds",
    "find_credential",
    "find_secret",
    "redact_credentials",
    "shannon_entropy",
]

_NOT_KEY_CHAR = r"(?<![A-Za-z0-9_-])"
_PRIVATE_KEY_LABEL = r"(?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
# A name that says its value is a credential; ``tokens`` (max_tokens) is a count, not a secret.
_SECRET_NAME = (
    r"passw(?:or)?d|pwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|auth[_-]?token|token(?!s)|credentials?|authorization"
)
# What every name _SECRET_NAME matches holds (folded): a text without any of them has no match
# that admission or redaction keeps, and a match neither keeps leaves the text as it was.
_SECRET_NAME_HINTS = ("pass", "pwd", "secret", "key", "token", "credential", "authorization")
_NAME_ENDS_SECRET = re.compile(rf"(?i)(?:{_SECRET_NAME})\Z")
_NAME_HAS_SECRET = re.compile(rf"(?i){_SECRET_NAME}")
# Code that computes a value (settings.TOKEN, os.environ["X"], get_token()) is not a literal.
_EXPRESSION = re.compile(r"[.(\[]")
_ALREADY_REDACTED = re.compile(r"(?i)\[redacted")
# A bare value that is code reaching for a value: document.querySelector(, os.environ[,
# settings.API_TOKEN, getToken(, document?.querySelector(. A credential has no dotted
# identifier chain in it.
_CODE_VALUE = re.compile(
    r"[A-Za-z_$][\w$]*(?:(?:\??\.|::|->)[A-Za-z_$][\w$]*)*\??[(\[].*"
    r"|[A-Za-z_$][\w$]*(?:(?:\??\.|::|->)[A-Za-z_$][\w$]*)+"
)
# An identifier made of letters alone (csrfToken, user_password): a variable, not a literal.
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z_$]*")
# Words joined as code joins them: camelCase or snake_case (not one run, supersecretvalue).
_JOINED_WORDS = re.compile(r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]")
# What continues an expression after a line break or spaces: document\n  .querySelector(
_CONTINUES = re.compile(r"(?:\s|\\[nrt]){0,64}(?:\??\.[A-Za-z_$]|::|->|\()")
# A method called on the next line (document\n  .querySelector(): code in any context, unlike a
# bare ".foo" or "(" after a value, which may be prose following a literal.
_CONTINUES_CALL = re.compile(r"(?:\s|\\[nrt]){0,64}(?:\??\.|::|->)[A-Za-z_$][\w$]*\(")
# An assignment that reads as code: the name declared by a keyword (const csrfToken = …), or a
# key of an object literal ({ _csrf_token: csrfToken }, authToken: authToken}). A bare shell or
# env assignment (export DB_PASSWORD=..., PGPASSWORD=...) is neither.
_DECLARED = re.compile(r"(?:^|[^\w$.])(?:const|let|var|val|auto|final|my|local)\s{1,8}\Z")
_OBJECT_KEY = re.compile(r"[{,]\s{0,8}\Z")
# What may trail a bare identifier without being part of it: closing brackets, and the escaped
# line break of a value inside JSON text ("document\\n  .querySelector(").
_TRAILER = re.compile(r"(?:\\[nrt]|[}\]])+\Z")
# A value opening with a bracket or a negation, then a word: (await res.json()), !token
_OPERATOR_VALUE = re.compile(r"[(!]{1,4}[A-Za-z_$]+(?:[\s.(\[].*)?")
# Two lowercase words joined by a hyphen (one-time, single-use, short-lived): an English compound
# adjective. Three or more (purple-monkey-dishwasher) read as a passphrase.
_COMPOUND_ADJECTIVE = re.compile(r"[a-z]{2,}-[a-z]{2,}")
# The groups that hold the credential itself, when it is not the whole match.
_SECRET_GROUPS = ("secret", "dq", "sq", "bare")


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    groups = match.re.groupindex
    for name in _SECRET_GROUPS:
        if name in groups and match.start(name) != -1:
            return match.span(name)
    return match.span()


def _literal_bearer(match: re.Match[str]) -> bool:
    # "Bearer authenticationscheme" is prose; a token mixes letters and digits.
    return mixed(match.group("token"))


def _literal_assignment(match: re.Match[str]) -> bool:
    if not _NAME_ENDS_SECRET.search(match.group("name")):
        return False  # TOKEN_PATH=..., password_hash: ... name something else
    quoted = match.group("bare") is None
    start, end = _secret_span(match)
    value = match.string[start:end] if quoted else match.string[start:end].rstrip(".:")
    if len(value) < 6 or any(c.isspace() for c in value) or _PLACEHOLDER.match(value):
        return False
    if quoted:
        # A quoted literal is a value, unless it is a short plain word ("string", "Bearer").
        return mixed(value) or not value.isalnum() or len(value) >= 16
    # Unquoted, only a value mixing letters and digits reads as a literal password; a bare word
    # (token: required) or an expression (token=settings.TOKEN) is configuration talk.
    return mixed(value) and not _EXPRESSION.search(value)


def _redact_assignment(match: re.Match[str]) -> bool:
    if not _NAME_HAS_SECRET.search(match.group("name")):
        return False
    start, end = _secret_span(match)
    value = match.string[start:end]
    if _ALREADY_REDACTED.match(value):
        return False
    if match.group("bare") is not None and _bare_code(match, value, end):
        return False
    return len(value) >= 8 or _literal_assignment(match)


def _bare_code(match: re.Match[str], value: str, end: int) -> bool:
    """Whether an unquoted value is code: a call or member access (``document.querySelector(``,
    also a method called on the next line), or, when the assignment itself reads as code
    (:func:`_code_context`), an identifier continued on the next line or a letters-only
    camelCase or snake_case identifier naming a credential (``_csrf_token: csrfToken``), which
    holds a value rather than being one. Never decided from the value alone: a bare
    ``PGPASSWORD=postgresPassword`` hands over a literal."""
    if _CODE_VALUE.fullmatch(value):
        return True
    trailer = _TRAILER.search(value)
    name = value[: trailer.start()] if trailer else value
    if not _IDENTIFIER.fullmatch(name):
        return False
    after = end - (len(value) - len(name))
    if _CONTINUES_CALL.match(match.string, after):
        return True
    if not _code_context(match):
        return False
    if _CONTINUES.match(match.string, after):
        return True
    return bool(_JOINED_WORDS.search(name) and _NAME_HAS_SECRET.search(name))


def _code_context(match: re.Match[str]) -> bool:
    before = match.string[max(0, match.start("name") - 64) : match.start("name")]
    if _DECLARED.search(before):
        return True
    separator = match.string[match.end("name") : match.start("bare")]
    return ":" in separator and bool(_OBJECT_KEY.search(before))


@dataclass(frozen=True, slots=True)
class _Format:
    kind: str
    # The pattern's source (and flags, below), compiled the first time a text holds one of the
    # hints: a card names few of the formats' literals, so most are never compiled in most
    # processes (:mod:`active_memory.screening.compiled`).
    source: str
    # Admission flags a match only when this holds (None: every match is a credential).
    literal: Callable[[re.Match[str]], bool] | None = None
    # Redaction replaces a match only when this holds (None: every match).
    redact: Callable[[re.Match[str]], bool] | None = None
    # The secret is the first non-empty numbered group (detect-secrets' patterns), not a name.
    numbered: bool = False
    # The value's span, when the pattern knows it (secret_forms).
    value_span: Callable[[re.Match[str]], tuple[int, int]] | None = None
    # Lowercase substrings one of which a text's required_literals.case_fold must hold for the
    # pattern to apply (empty: any).
    hints: tuple[str, ...] = ()
    flags: int = 0

    @property
    def pattern(self) -> re.Pattern[str]:
        return compiled(self.source, self.flags)

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        if self.value_span is not None:
            return self.value_span(match)
        if self.numbered:
            for index in range(1, (match.re.groups or 0) + 1):
                if match.group(index):
                    return match.span(index)
            return match.span()
        return _secret_span(match)


_FORMATS: tuple[_Format, ...] = (
    # Hints: see _Format.hints (tests/screening/test_redaction_hints.py proves them).
    _Format("private_key", (
        rf"-----BEGIN {_PRIVATE_KEY_LABEL}[\s\S]*?(?:-----END {_PRIVATE_KEY_LABEL}|\Z)"
        r"|PuTTY-User-Key-File-\d{1,2}:[\s\S]*?(?:Private-MAC: ?[0-9A-Fa-f]{1,128}|\Z)"),
        hints=("-----begin ", "putty-user-key-file-")),
    # The end of a key whose beginning was cut away (e.g. an excerpt's tail). A separate entry,
    # so a whole key above has been consumed before this one looks for a lone END line.
    _Format("private_key", rf"\A[\s\S]*?-----END {_PRIVATE_KEY_LABEL}",
            hints=(" private key",)),
    _Format("anthropic_key", _NOT_KEY_CHAR + r"sk-ant-[A-Za-z0-9_-]{16,}",
            hints=("sk-ant-",)),
    _Format("openai_key", _NOT_KEY_CHAR + r"sk-(?!ant-)[A-Za-z0-9_-]{20,}",
            hints=("sk-",)),
    _Format("aws_access_key", (
        r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)"
        r"[A-Z0-9]{16}(?![A-Z0-9])"),
        hints=("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva")),
    _Format("github_token",
            r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
            hints=("gh", "github_pat_")),
    _Format("slack_token", r"(?<![A-Za-z0-9])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}",
            hints=("xox", "xapp-")),
    _Format("google_api_key", _NOT_KEY_CHAR + r"AIza[0-9A-Za-z_-]{35}",
            hints=("aiza",)),
    # Mailgun's old "key-" keys and its newer ones: 32 hex, then two groups of 8 hex.
    _Format("mailgun_key", (
        r"(?<![A-Za-z0-9_-])(?:key-[0-9a-zA-Z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})"
        r"(?![A-Za-z0-9_-])"), hints=("-",)),
    # HashiCorp Vault service, batch and recovery tokens (hvs., hvb., hvr.).
    _Format("vault_token", r"(?<![A-Za-z0-9_.-])hv[sbr]\.[A-Za-z0-9_-]{24,}",
            hints=("hvs.", "hvb.", "hvr.")),
    _Format("service_token", (
        _NOT_KEY_CHAR + r"(?:(?:glpat-|pypi-)[A-Za-z0-9_-]{20,}"
        r"|(?:npm_|hf_|[sr]k_(?:live|test)_)[A-Za-z0-9]{20,}(?![_-]))"),
        hints=("glpat-", "pypi-", "npm_", "hf_", "k_live_", "k_test_")),
    _Format("jwt", (
        _NOT_KEY_CHAR + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        hints=("eyj",)),
    _Format("url_credentials", (
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://"
        r"(?P<secret>[^/\s:@]{0,256}:[^/\s@]{1,256})@"), hints=("://",)),
    _Format("bearer_token",
        r"(?i)\bbearer\s{1,8}(?P<token>[A-Za-z0-9._~+/-]{16,}=*)", literal=_literal_bearer,
        hints=("bearer",)),
    # NAME=value, "password": "value", api-key: value. The name is a whole run of name
    # characters (so a run is tried once, not at each of its offsets); only the value is secret.
    _Format("password_assignment", (
        r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]{1,128})[\"']?\s{0,8}[:=]\s{0,8}"
        r"(?:\"(?P<dq>[^\"\n]{0,512})\"|'(?P<sq>[^'\n]{0,512})'|(?P<bare>[^\s\"',;)]+))"),
        literal=_literal_assignment, redact=_redact_assignment, hints=_SECRET_NAME_HINTS),
)  # fmt: skip

# Each alternative opens with a case-sensitive character set, so the scan skips ahead to
# candidate letters instead of trying every offset (case-insensitive alternations cannot).
_W = r"(?<!\w.)"  # right after an alternative's first letter: nothing word-like before it
_PROSE_NAME = (
    rf"(?:[Pp]{_W}(?i:assw(?:or)?d|assphrase|ass\s?code|wd|in\s?code)"
    rf"|[Aa]{_W}(?i:pi[\s_-]?key|ccess\s+key|uth\s+token|ccess\s+token)"
    rf"|[Ss]{_W}(?i:ecret\s+key|ecret)|[Tt]{_W}(?i:oken))"
)
_PROSE_VALUE = r"[`'\"“‘]?(?P<{group}>[^\s`'\"”’]{{6,128}})"
_PROSE_PASSWORD = (
    # the staging password is X / password for admin: X / the api key, X
    rf"{_PROSE_NAME}\b"
    r"(?i:(?:\s+(?:for|of|on|in)\s+(?:the\s+|our\s+|this\s+|that\s+)?(?:[\w.@-]{1,40}\s+){0,2}"
    r"[\w.@-]{1,40})?"
    r"(?:\s*[,:=]\s*|\s+(?:is|was|remains|reads|equals|(?:is\s+)?still|should\s+be|must\s+be|"
    r"(?:is\s+)?set\s+to|(?:is\s+)?now|becomes)\s+(?:just\s+|simply\s+)?))"
    + _PROSE_VALUE.format(group="secret")
    # log in as admin / X, sign in with admin:X, connect as admin with password X
    + rf"|[LlSsCcAa]{_W}(?i:(?:og\s*in|ign\s*in|ogin|uthenticate|onnect)\s+(?:as|with)\s+"
    r"[\w.@-]{1,64}\s*(?:/|:|,?\s+(?:and\s+|with\s+)?(?:the\s+)?(?:password|passphrase|pwd)"
    r"\s*:?)\s*)"
    + _PROSE_VALUE.format(group="login")
    # with the password X (no verb: the value must mix letters and digits, see _literal_prose)
    + rf"|{_PROSE_NAME}\s+"
    + _PROSE_VALUE.format(group="bare")
    # set the Heroku API key to X
    + rf"|[Ss]{_W}(?i:et\s+(?:the\s+|your\s+|our\s+|its\s+)?(?:[\w.-]{{1,30}}\s+){{0,2}}"
    r"(?:password|passphrase|api\s+key|token|secret)\s+to\s+)"
    + _PROSE_VALUE.format(group="set")
    # use X as the password
    + rf"|[Uu]{_W}(?i:se\s+)"
    + _PROSE_VALUE.format(group="use")
    + r"[`'\"”’]?(?i:\s+as\s+(?:the\s+|your\s+|an?\s+)?(?:\w+\s+)?"
    r"(?:password|passphrase|api\s+key|token|secret))\b"
    # the database login is admin / X, the admin credentials are root:X, user and password for
    # Jenkins: ci-bot / X (a user name, then the password)
     + rf"|(?P<noun>[LlCcUuAa]){_W}(?i:ogins?|redentials?|reds|ser(?:name)?\s*(?:and|/|&)\s*"
    r"pass(?:word)?|ccount)\b"
    r"(?i:(?:\s+(?:for|of|on|to|in)\s+(?:the\s+|our\s+|this\s+)?(?:[\w.@-]{1,40}\s+){0,2}"
    r"[\w.@-]{1,40})?(?:\s*[,:=]\s*|\s+(?:is|are|was|were|remains?|reads?)\s+(?:still\s+|now\s+)?)"
    r"[\w.@-]{1,64}(?P<sep>\s+/\s+|\s*:\s*|/|\s*,\s*(?:password\s*:?\s*)?|\s+and\s+"
    r"(?:the\s+)?(?:password\s+)?|\s+with\s+(?:the\s+)?password\s+))"
    + _PROSE_VALUE.format(group="pair")
    # pass: X, pw=X
    + rf"|[Pp]{_W}(?i:ass|w)\s*[:=]\s*"
    + _PROSE_VALUE.format(group="short")
)
_PROSE_GROUPS = ("secret", "login", "set", "use", "bare", "pair", "short")
_LITERAL_END = ".,;:!?)]}"


def _prose_span(match: re.Match[str], *, strip: bool = True) -> tuple[int, int]:
    """The value's span; ``strip`` leaves out trailing punctuation (admission judges the value
    without it, redaction takes it too: ``Hunter2Blue!`` may end in its own ``!``)."""
    for name in _PROSE_GROUPS:
        if match.start(name) != -1:
            start, end = match.span(name)
            if not strip:
                return start, end
            value = match.string[start:end].rstrip(_LITERAL_END)
            return start, start + len(value)
    return match.span()


def _literal_prose(match: re.Match[str]) -> bool:
    start, end = _prose_span(match)
    value = match.string[start:end]
    if len(value) < 6 or _PLACEHOLDER.match(value) or _CODE_VALUE.fullmatch(value):
        return False
    if _OPERATOR_VALUE.fullmatch(value):
        return False  # token = (await res.json()).token, token = !token: an expression
    if value.startswith(("$", "%", "{", "<", "[")) or "://" in value or "/" in value:
        return False  # a variable, a template, a URL or a path names where it is, not what
    name = value.lstrip("@:&*^")
    if (
        _IDENTIFIER.fullmatch(name)
        and _JOINED_WORDS.search(name)
        and match.string[match.start() : start].rstrip().endswith(",")
    ):
        return False  # {token, project_id, ...}, (token, @review_port): the next name in a list
    said = match.string[match.start() : start].lower()
    secret_said = any(w in said for w in ("pass", "pwd", "secret"))
    if _COMPOUND_ADJECTIVE.fullmatch(value) and not secret_said:
        return False  # "the token is one-time": an adjective; three words are a passphrase
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    symbols = any(not c.isalnum() for c in value)
    if value.isupper() or value.replace("_", "").isupper():
        return False  # an environment variable's name (DB_PASSWORD), not its value
    if match.start("pair") != -1 and match.group("noun") in "Aa" and match.group("sep") == "/":
        return False  # "the account is acme/billing-2024" names an owner and a project
    if match.start("bare") != -1:
        # "token refresh-interval" is prose: without a verb only a value of 8 or more that
        # mixes letters, digits and capitals or symbols reads as a literal.
        mixed = symbols or any(c.isupper() for c in value)
        return letters and digits and mixed and len(value) >= 8
    return letters and (digits or symbols)


# What every match of _PROSE_PASSWORD holds (folded), arm by arm: the names (pass…, pwd, pin,
# api, acc…, aut…, secret, token; pw= too), "set …", "use …", then the arms whose first
# letter is one of several: [LlSsCcAa] before og/ign/uthenticate/onnect, and [LlCcUuAa]
# before ogin/red/ccount (user and pass holds "pass").
_PROSE_HINTS = (
    "pass", "pw", "pin", "api", "acc", "aut", "secret", "token", "set", "use",
    *(first + rest for first in "lsca" for rest in ("og", "ign", "uthenticate", "onnect")),
    *(first + rest for first in "lcua" for rest in ("ogin", "red", "ccount")),
)  # fmt: skip
# Redaction takes the value's trailing punctuation too (its span, strip=False).
_PROSE = _Format("password_in_prose", _PROSE_PASSWORD, _literal_prose, _literal_prose, False,
                 partial(_prose_span, strip=False), _PROSE_HINTS)  # fmt: skip

CREDENTIAL_KINDS: tuple[str, ...] = tuple(
    dict.fromkeys([*(fmt.kind for fmt in _FORMATS), _PROSE.kind, *(f.kind for f in FORMS)])
)
SECRET_KINDS: tuple[str, ...] = (*CREDENTIAL_KINDS, "high_entropy")


@cache
def _all_formats() -> tuple[_Format, ...]:
    detected = tuple(_Format(kind, source, numbered=True, hints=hints, flags=flags)
                     for kind, source, flags, hints in plugin_sources())  # fmt: skip
    forms = tuple(
        _Format(f.kind, f.source, f.literal, f.literal, False, f.span, f.hints) for f in FORMS
    )
    return (*_FORMATS, *detected, _PROSE, *forms)


_hint_memo: list[tuple[tuple[_Format, ...], HintTable]] = []


def _hints_of(formats: tuple[_Format, ...]) -> HintTable:
    """The hints of ``formats`` as one table, kept for the last tuple of formats asked about
    (``_all_formats()`` is built once, so that is the only one outside tests)."""
    if not _hint_memo or _hint_memo[-1][0] is not formats:
        _hint_memo[:] = [(formats, HintTable(fmt.hints or None for fmt in formats))]
    return _hint_memo[-1][1]


def detected_kinds() -> tuple[str, ...]:
    """The kinds the detect-secrets plugins add (``sendgrid_api_key``…), unique, in order."""
    return tuple(dict.fromkeys(kind for kind, _, _, _ in plugin_sources()))


def find_credential(text: str) -> str | None:
    """The kind of the first credential *format* in ``text`` (see CREDENTIAL_KINDS and
    :func:`detected_kinds`), or None.

    For identifiers (run ids, node ids) that may be long and random by design: it skips the
    ``high_entropy`` heuristic.
    """
    formats = _all_formats()
    for index in _hints_of(formats).candidates(_present(text, formats)):
        fmt = formats[index]
        if fmt.literal is None:
            if fmt.pattern.search(text):
                return fmt.kind
        elif any(fmt.literal(match) for match in fmt.pattern.finditer(text)):
            return fmt.kind
    return None


def _present(text: str, formats: tuple[_Format, ...]) -> frozenset[str]:
    """The hints of ``formats`` that ``text`` holds: one look for all of them at once (about
    100 substring tests) rather than each format's own in turn."""
    return _hints_of(formats).present(case_fold(text))


def find_secret(text: str) -> str | None:
    """The kind of the first credential found in ``text`` (see SECRET_KINDS), or None."""
    kind = find_credential(text)
    if kind is None and high_entropy(text):
        return "high_entropy"
    return kind


def redact_credentials(text: str, marker: Callable[[str], str]) -> tuple[str, tuple[str, ...]]:
    """``text`` with every credential format replaced by ``marker(kind)``, and the kinds found.

    Formats apply in order, each on the previous one's output, so ``sk-ant-…`` is one
    ``anthropic_key``, not also an ``openai_key``. Kinds are unique, in format order.
    """
    kinds: list[str] = []
    formats = _all_formats()
    present = _present(text, formats)  # again only when a format changed the text
    for fmt in formats:
        if fmt.hints and present.isdisjoint(fmt.hints):
            continue
        found = False

        def replace(match: re.Match[str], fmt: _Format = fmt) -> str:
            nonlocal found
            if fmt.redact is not None and not fmt.redact(match):
                return match.group(0)
            found = True
            start, end = fmt.span(match)
            whole, offset = match.group(0), match.start()
            return whole[: start - offset] + marker(fmt.kind) + whole[end - offset :]

        text = fmt.pattern.sub(replace, text)
        if found:
            present = _present(text, formats)
            if fmt.kind not in kinds:
                kinds.append(fmt.kind)
    return text, tuple(kinds)
