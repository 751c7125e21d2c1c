"""Personal data a pattern can find: e-mail addresses, people's home folders, phone numbers.

A card is read by every future agent of a repository and kept in a store many people share, so
it must not name a person. Three kinds, reported as ``personal:<kind>``:

- ``email``: an address with a dotted domain. Not personal, so passed: addresses at the
  domains reserved for documentation and private networks (``example.com``/``.org``/``.net``,
  ``.example``, ``.test``, ``.invalid``, ``.localhost``, ``.local``, ``.internal``,
  ``home.arpa``), no-reply and bot addresses (``noreply@…``,
  ``no-reply@…``, ``…[bot]@…``, ``…@users.noreply.github.com``), and scp-style remotes
  (``git@github.com:org/repo.git``: a user, a host and a path, not a mailbox). A team's role
  address (``security@acme.com``) is still refused: the screen cannot tell a role from a
  person, and an address in a card is also where a planted instruction would send data.
- ``home_directory``: ``/home/alice/…``, ``/Users/bob/…``, ``C:\\Users\\carol\\…`` (either
  slash). Not personal: ``~/…``, ``$HOME/…``, ``%USERPROFILE%``, placeholders (``/home/<user>``,
  ``/Users/$USER``) and the accounts CI images and containers use (``/home/runner``,
  ``/home/ubuntu``, ``/Users/Shared``…).
- ``phone``: an international number (``+44 20 7946 0000``: a plus, 8 to 15 digits in groups),
  a North American number with an area code in brackets (``(415) 555-0100``), or a number of 7
  to 15 digits in groups right after a word that says "phone" (``call``, ``tel``, ``mobile``,
  ``Telefon``, ``téléphone``, ``电话``…). Versions, dates, times, hashes, ports and counts have no
  such shape. A pattern can still mistake a number for a phone, so this one only quarantines.

Pure standard library, patterns anchored on a boundary with bounded gaps.
"""

from __future__ import annotations

import re

from active_memory.screening.compiled import compiled

__all__ = ["PERSONAL_KINDS", "find_personal"]

PERSONAL_KINDS: tuple[str, ...] = ("email", "home_directory", "phone")

_EMAIL = (
    r"(?<![\w.+%-])(?P<local>[A-Za-z0-9][\w.+%-]{0,63}(?:\[bot\])?)@"
    r"(?P<domain>(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24})\b"
)
_RESERVED_DOMAIN = (
    r"(?i)(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost|local|internal"
    r"|home\.arpa)$"
)
_SERVICE_USERS = frozenset({"git", "hg", "ssh", "svn", "gitlab", "forgejo", "gitea", "aur"})
_NO_REPLY = r"(?i)^(?:no-?reply|do-?not-?reply|donotreply|mailer-daemon)$|\[bot\]$"
_HOME = (
    r"(?<![\w.-])(?:/home|/Users|/export/home|[A-Za-z]:[\\/]+(?:Users|Documents and Settings))"
    r"[\\/]+(?P<user>[^\s\\/'\"`:;,)]{1,64})"
)
_NOBODY = frozenset(
    {"runner", "ubuntu", "ec2-user", "admin", "vscode", "codespace", "codespaces", "gitpod",
     "node", "user", "username", "runneradmin", "circleci", "travis", "jenkins", "docker",
     "vagrant", "jovyan", "linuxbrew", "build", "builder", "ci", "app", "appuser", "dev",
     "developer", "me", "you", "yourname", "your-name", "your_name", "name", "someone", "shared",
     "public", "default", "default user", "all users", "guest", "nobody", "root", "pi", "centos",
     "fedora", "debian", "alpine", "ubuntu-user", "azureuser", "opc", "cloud-user", "steam",
     "runner-user", "git", "postgres", "www-data", "...", "…", "*", "x", "foo", "bar", "example",
     "<user>", "<username>", "<you>", "<name>"}
)  # fmt: skip
_PLACEHOLDER_USER = r"^(?:\$\{?\w+\}?|%\w+%|<[^>]*>|\{\{?[^}]*\}?\}|\*+|\.+)$"
_GROUP = r"(?:[ .-]?\(?\d{1,4}\)?)"
_PHONE_WORDS = (
    "phone", "tel", "mobile", "cell", "call", "text", "sms", "whatsapp", "fax", "portable",
    "móvil", "celular", "телефон", "тел", "电话", "電話", "手机", "携帯", "전화",
)  # fmt: skip
# Each form after the lowercase substrings one of which a text must hold for it to apply (a
# test in C that spares most cards the pattern, and most processes its compile: every pattern
# here is a source, compiled on first need by :mod:`.compiled`).
_PHONES: tuple[tuple[tuple[str, ...], str], ...] = (
    # +44 20 7946 0000, +1-415-555-0100, +49 (0)30 1234567
    (("+",), r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(0\))?" + _GROUP + r"{2,6}(?![\w.-]?\d)"),
    # (415) 555-0100
    (("(",), r"(?<![\w(])\(\d{3}\)[ ]?\d{3}[ .-]\d{4}(?![\w-]?\d)"),
    # call 555 0100, Tel. 030 1234567, mobile: 07700 900123, 电话 010-1234-5678
    (_PHONE_WORDS, (
        r"(?i:\b(?:phone|tel|telephone|mobile|cell|cellphone|call|text|sms|whatsapp|fax|"
        r"telefon|téléphone|portable|teléfono|móvil|celular|telefono|telefone|телефон|тел)\.?"
        r"|电话|電話|手机|携帯|전화)"
        r"(?:\s*(?:no\.?|number|nr\.?|nummer|numéro|número|номер)\s*)?[:：]?\s{0,3}"
        r"(?P<national>\(?\d{2,5}\)?(?:[ .-]\d{2,8}){1,4})(?![\w.-]?\d)")),
)  # fmt: skip
_HOME_HINTS = ("/home", "/users", "\\users", "documents and settings")

# What a number after "call" or "text" may be besides a phone: a date, an address, a version.
_NOT_PHONE = r"\d{4}[-.]\d{2}[-.]\d{2}|\d{1,3}(?:\.\d{1,3}){3}|\d+(?:\.\d+){2,}"


def _phone(match: re.Match[str]) -> bool:
    digits = sum(c.isdigit() for c in match.group(0))
    if "national" in match.re.groupindex:
        national = match.group("national")
        count = sum(c.isdigit() for c in national)
        return 7 <= count <= 15 and not compiled(_NOT_PHONE).fullmatch(national)
    return 8 <= digits <= 15 if match.group(0).startswith("+") else digits == 10


def _email(match: re.Match[str]) -> bool:
    if match.group("local").lower() in _SERVICE_USERS:
        return False  # git@github.com:org/repo.git, ssh -T git@github.com: a remote account
    domain = match.group("domain").lower()
    if compiled(_RESERVED_DOMAIN).search(domain) or domain.endswith("users.noreply.github.com"):
        return False
    return not compiled(_NO_REPLY).search(match.group("local"))


def _home(match: re.Match[str]) -> bool:
    user = match.group("user").rstrip(".,;!?")
    return user.lower() not in _NOBODY and not compiled(_PLACEHOLDER_USER).match(user)


def find_personal(text: str) -> tuple[str, ...]:
    """The kinds of personal data in ``text``, in :data:`PERSONAL_KINDS` order."""
    found: list[str] = []
    if "@" in text and any(_email(m) for m in compiled(_EMAIL).finditer(text)):
        found.append("email")
    lowered = text.lower()
    if any(hint in lowered for hint in _HOME_HINTS) and any(
        _home(m) for m in compiled(_HOME).finditer(text)
    ):
        found.append("home_directory")
    for hints, pattern in _PHONES:
        if any(hint in lowered for hint in hints) and any(
            _phone(m) for m in compiled(pattern).finditer(text)
        ):
            found.append("phone")
            break
    return tuple(found)
