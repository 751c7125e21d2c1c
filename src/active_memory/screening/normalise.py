"""Views of card text: what a model reads through a disguise, for the instruction screen.

A model reads ``1gn0r3 4ll pr3v10u5 1n5truct10n5``, ``i g n o r e  a l l``,
``ig<!-- -->nore``, ``[ignore all](x) [previous instructions](y)`` and a base64 or hex run as
plainly as the sentence they spell; a screen that reads only the literal text does not. This
module builds the other readings, and :mod:`active_memory.screening.instructions` runs its
patterns on each:

* :func:`base`: invisible characters removed (zero-width, bidi, tags), NFKC, case folded,
  spaces kept (letter-spacing is measured in spaces);
* :func:`plain`: :func:`base` with accents taken off Latin letters and spaces collapsed, the
  text the other languages' phrases are matched on (TR39 folding would turn Cyrillic ``о`` and
  ``е`` into Latin letters inside a Russian word);
* :func:`disguised_views`: leetspeak folded (``1`` as ``i`` and as ``l``, ``0 3 4 5 7 @ $``),
  letter-spacing collapsed (``i g n o r e`` and ``i.g.n.o.r.e``; spaced evenly throughout,
  split into instruction words), markup exposed (HTML and
  markdown comments dropped, link and image text in place of the link, tags replaced by their
  ``alt``/``title``, emphasis marks dropped). A view is kept only when the disguise hid a word
  an instruction pattern needs (:data:`TRIGGERS`), so ordinary identifiers such as ``l10n``,
  ``k8s`` or ``sqlite3`` cost nothing; :func:`leet_words`, :func:`leet_spellings` and
  :func:`leet_reading` let :mod:`active_memory.screening.instructions` fold only the leet words
  that spell one of a detector's own words (``fr0m``, ``4ctual``), which that list misses;
* :func:`decoded_texts`: base64 (standard and URL-safe), hex (plain, spaced, ``\\x41``,
  ``0x41``, ``\\u0041``) and percent-encoded runs decoded when the result is printable text
  (a hash or a colour decodes to bytes, not words), and runs inside those decoded once more.

Every step is bounded so a hostile card cannot make screening slow: the views read the first
:data:`MAX_VIEWED` characters (a card holds far fewer; a longer text is refused for its
length), a run is decoded only at a plausible length (:data:`MIN_RUN` to :data:`MAX_RUN`
characters), at most :data:`MAX_ATTEMPTS` runs are tried and :data:`MAX_DECODED` kept, at most
:data:`MAX_DEPTH` levels deep; every pattern's gaps are bounded.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

from active_memory.screening.frame import strip_invisible

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_DECODED",
    "MAX_DEPTH",
    "MAX_RUN",
    "MAX_VIEWED",
    "MIN_RUN",
    "TRIGGERS",
    "Decoding",
    "base",
    "decoded_texts",
    "disguised_views",
    "leet_reading",
    "leet_reveals",
    "leet_spellings",
    "leet_views",
    "leet_words",
    "markup_view",
    "may_instruct",
    "plain",
    "unspaced",
    "without_marks",
]

# A card's text is at most 640 bytes (a title 96); longer text is refused by the card rules
# whatever it says, so the views read only its beginning: a hostile 64 KiB answer costs the
# literal screen, not that many times over.
MAX_VIEWED = 8 * 1024
MIN_RUN = 16
MAX_RUN = 4096
MAX_ATTEMPTS = 32
MAX_DECODED = 8
MAX_DEPTH = 2

# Words some strong instruction pattern cannot do without. A disguise that hides none of them
# hides no instruction those patterns could find.
TRIGGERS = frozenset(
    {
        "ignore", "ignoring", "disregard", "forget", "override", "overrule", "discard",
        "instruction", "instructions", "prompt", "prompts", "previous", "prior", "above",
        "earlier", "rules", "system", "developer", "reveal", "pretend", "jailbreak", "jailbroken",
        "unrestricted", "approve", "approved", "approval", "lgtm", "always", "never", "reject",
        "verdict", "verifier", "reviewer", "pass", "passed", "mark", "complete", "send", "upload",
        "post", "exfiltrate", "transmit", "forward", "leak", "share", "email", "mail", "paste",
        "curl", "wget", "fetch", "iwr", "irm", "bash", "sh", "powershell", "eval", "exec",
        "base64", "decode", "secret", "secrets", "token", "tokens", "credential", "credentials",
        "password", "passwords", "key", "keys", "ssh", "env", "printenv", "environment", "netrc",
        "aws", "authorized_keys", "crontab", "cron", "rm", "force", "push", "delete", "verify",
        "hooks", "hook", "disable", "bypass", "skip", "checks", "signing", "abandon", "task",
        "stop", "instead", "reply", "all", "any", "every", "everything", "new", "now", "you",
        "act", "mode", "dan", "role", "assistant", "human", "mkfs", "dd", "tcp", "gpgsign",
        "chmod", "nc", "ncat", "netcat", "socat", "drop", "database", "iex", "invoke",
        "downloadstring", "deno", "python", "node", "perl", "ruby", "pip", "npm", "install",
        "sudo", "cat", "echo", "commit", "git", "reset", "clean", "tee", "launchctl", "systemctl",
        "husky", "hookspath",
    }
)  # fmt: skip

# Words a letter-spaced instruction is made of, for splitting one spaced evenly throughout.
_VOCABULARY = TRIGGERS | {
    "a", "an", "the", "to", "of", "and", "or", "your", "my", "this", "that", "these", "is",
    "are", "from", "on", "in", "with", "it", "me", "done", "ok", "pr", "change", "changes",
    "test", "tests", "main", "origin",
}  # fmt: skip
_LONGEST = max(map(len, _VOCABULARY))

_WHITESPACE = re.compile(r"\s+")
_WORDS = re.compile(r"[^\W\d_]{2,}")
# A word mixing letters with leet digits or signs ("1gn0r3", "4ll", "$ecret"), not a number.
_LEET_WORD = re.compile(r"(?<![\w@$])(?=[a-z0-9@$]*[a-z])[a-z0-9@$]*[0-9@$][a-z0-9@$]*")
_LEET_I = str.maketrans("10345@$7", "ioeasast")
_LEET_L = str.maketrans("10345@$7", "loeasast")
# Single characters with one separator between each: "i g n o r e", "i.g.n.o.r.e", "i-g-n".
_SPACED = re.compile(r"(?<!\S)(\w)([ .\-_*+|~/])(?:\w\2){1,63}\w(?!\w)")
_COMMENT = re.compile(r"<!--(?:(?!-->)[\s\S]){0,2000}-->|\[//\]:\s*#\s*\([^)]{0,500}\)")
_LINK = re.compile(r"!?\[([^\]\[]{0,300})\]\([^()\s]{0,500}(?:\s+\"[^\"]{0,200}\")?\)")
_TAG = re.compile(r"</?[a-z][^<>]{0,300}>")
_ATTRIBUTE = re.compile(r"\b(?:alt|title|aria-label)\s*=\s*[\"']([^\"']{0,300})[\"']")
# Emphasis and code marks; a single "_" only at a word's edge (snake_case stays one word).
_MARKS = ("<", "](", "*", "__", " _", "_ ", "~", "`")
_EMPHASIS = re.compile(r"[*~`]+|__+|(?<!\w)_+|_+(?!\w)")

_BASE64 = re.compile(rf"[A-Za-z0-9+/_-]{{{MIN_RUN},}}={{0,2}}")
_HEX = re.compile(
    r"\b(?:[0-9a-fA-F]{2}){8,}\b"
    r"|(?:\\x[0-9a-fA-F]{2}){4,}"
    r"|\b(?:0x[0-9a-fA-F]{2}[\s,;]{0,2}){4,}"
    r"|\b(?:[0-9a-fA-F]{2}[ :]){7,}[0-9a-fA-F]{2}\b"
)
_UNICODE_ESCAPES = re.compile(r"(?:\\u[0-9a-fA-F]{4}){4,}")
# A token holding at least three %XX escapes ("ignore%20all%20previous"); tokens are found
# by a scan for "%", never by a pattern that could backtrack along a long token.
_PERCENT = re.compile(rf"(?<!\S)(?=\S{{0,{MAX_RUN}}}?%[0-9a-fA-F]{{2}})\S{{1,{MAX_RUN}}}")
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
_HEX_DIGITS = re.compile(r"[^0-9a-fA-F]")
_HEX_PREFIXED = re.compile(r"(?:\\x|0x)([0-9a-fA-F]{2})")


def base(text: str) -> str:
    """``text`` without invisible characters, NFKC, case folded; spacing kept."""
    return unicodedata.normalize("NFKC", strip_invisible(text)).casefold()


_TATWEEL = "\u0640"


def _arabic(char: str) -> bool:
    return "\u0600" <= char <= "\u06ff"


def without_marks(text: str) -> str:
    """``text`` without the marks on Latin letters and the short vowels and hamza seats of
    Arabic letters (the phrase tables are written the same way)."""
    if text.isascii():
        return text
    out: list[str] = []
    for char in unicodedata.normalize("NFKD", text):
        # Marks on Latin letters and Arabic short vowels (written or not, the same word) only:
        # Devanagari and Hangul vowel signs are letters' halves.
        if unicodedata.combining(char) and out and (out[-1].isascii() or _arabic(out[-1])):
            continue
        if char != _TATWEEL:  # the stretching stroke of Arabic script: no letter
            out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


def plain(text: str) -> str:
    """:func:`base`, accents off Latin letters, spaces collapsed: the text the phrase tables
    of other languages are matched on."""
    return _WHITESPACE.sub(" ", without_marks(base(text))).strip()


def leet_views(text: str) -> tuple[str, ...]:
    """``text`` (lower case) with leetspeak folded in every word mixing letters and
    ``0 1 3 4 5 7 @ $``: ``1`` read as ``i``, then as ``l`` when a ``1`` was folded."""
    if not _LEET_WORD.search(text):
        return ()
    views = [_LEET_WORD.sub(lambda match: match.group(0).translate(_LEET_I), text)]
    if "1" in text:
        other = _LEET_WORD.sub(lambda match: match.group(0).translate(_LEET_L), text)
        if other != views[0]:
            views.append(other)
    return tuple(views)


def _segment(letters: str) -> str | None:
    """``letters`` split into :data:`_VOCABULARY` words, fewest words first ("ignoreall
    previousinstructions"), or None when they do not split that way."""
    best: list[list[str] | None] = [[], *([None] * len(letters))]
    for end in range(1, len(letters) + 1):
        for start in range(max(0, end - _LONGEST), end):
            head = best[start]
            if head is not None and letters[start:end] in _VOCABULARY:
                candidate = [*head, letters[start:end]]
                current = best[end]
                if current is None or len(candidate) < len(current):
                    best[end] = candidate
    found = best[-1]
    return " ".join(found) if found else None


def _closed(match: re.Match[str]) -> str:
    letters = match.group(0).replace(match.group(2), "")
    # One space between letters and one between words leaves no word boundary: "i g n o r e
    # a l l" closes to "ignoreall", which only a split into known words reads.
    return (_segment(letters) if len(letters) >= 8 else None) or letters


def unspaced(text: str) -> str:
    """``text`` with letter-spaced runs (``i g n o r e``, ``i.g.n.o.r.e``) closed up; a wider
    gap between runs stays a space, and a run spaced evenly throughout is split into words when
    it is made of instruction words."""
    if not _SPACED.search(text):
        return text
    return _SPACED.sub(_closed, text)


def markup_view(text: str) -> tuple[str, str]:
    """``text`` with comments dropped, links and images read as their text, tags as their
    ``alt`` or ``title``, emphasis marks gone; and what was hidden in markup (comment bodies,
    link text, attributes), to tell whether the view is worth screening."""
    if not any(mark in text for mark in _MARKS):
        return text, ""
    hidden: list[str] = []

    def dropped(match: re.Match[str]) -> str:
        hidden.append(match.group(0))
        return ""

    def linked(match: re.Match[str]) -> str:
        hidden.append(match.group(1))
        return match.group(1)

    def tagged(match: re.Match[str]) -> str:
        attributes = [found.group(1) for found in _ATTRIBUTE.finditer(match.group(0))]
        hidden.extend(attributes)
        return " ".join(attributes)

    view = _COMMENT.sub(dropped, text)
    view = _LINK.sub(linked, view)
    view = _TAG.sub(tagged, view)
    view = _EMPHASIS.sub("", view)
    return view, " ".join(hidden)


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text))


# Whether words (another language's) may start an instruction: the phrase tables' own test.
Hint = Callable[[str], bool]


def _reveals(hidden: str, hint: Hint | None) -> bool:
    if not TRIGGERS.isdisjoint(_WORDS.findall(hidden)):
        return True
    return hint is not None and bool(hidden.strip()) and hint(hidden)


def leet_reveals(text: str, hint: Hint | None) -> bool:
    """Whether a leet word of ``text``, folded, is a trigger (only the mixed words are read,
    so an ordinary card pays for its few of them, not for a whole view)."""
    mixed = " ".join(_LEET_WORD.findall(text))
    return bool(mixed) and any(
        _reveals(mixed.translate(table), hint) for table in (_LEET_I, _LEET_L)
    )


def leet_words(text: str) -> frozenset[str]:
    """The words of ``text`` (lower case) mixing letters with ``0 1 3 4 5 7 @ $``."""
    return frozenset(_LEET_WORD.findall(text))


def leet_spellings(word: str) -> tuple[str, ...]:
    """What a leet ``word`` spells: ``1`` read as ``i``, then as ``l`` when that differs."""
    spelled = word.translate(_LEET_I)
    other = word.translate(_LEET_L)
    return (spelled,) if other == spelled else (spelled, other)


def leet_reading(text: str, spelled: Mapping[str, str]) -> str:
    """``text`` (lower case) with only the leet words in ``spelled`` read as it says: the
    others (``python3``, ``ed25519``) stay as written, for the patterns that need them so."""
    parts: list[str] = []
    done = 0
    for match in _LEET_WORD.finditer(text):
        word = spelled.get(match.group(0))
        if word is not None:
            parts += (text[done : match.start()], word)
            done = match.end()
    return "".join(parts) + text[done:] if parts else text


def may_instruct(text: str) -> bool:
    """Whether ``text`` could hold an English instruction at all: a trigger word, a bracket,
    pipe or substitution, or a character outside ASCII (the phrase tables decide those)."""
    return (
        not text.isascii() or any(mark in text for mark in "<>[]|`$") or _reveals(base(text), None)
    )


def disguised_views(text: str, hint: Hint | None = None) -> tuple[str, ...]:
    """The readings of ``text`` (as :func:`base`) through leetspeak, letter-spacing and markup
    that reveal a word an instruction needs: a :data:`TRIGGERS` word, or words ``hint`` says
    may start one (another language's); none for ordinary text."""
    flat = base(text[:MAX_VIEWED])
    views: list[str] = []
    # Only the closed-up runs are new words: read them, not the whole closed text.
    runs = " ".join(_closed(match) for match in _SPACED.finditer(flat))
    if runs and _reveals(runs, hint):
        views.append(unspaced(flat))
    if leet_reveals(flat, hint):
        views += leet_views(flat)
    if runs and leet_reveals(runs, hint):
        views += leet_views(unspaced(flat))
    marked, hidden = markup_view(flat)
    if marked != flat and (
        _reveals(hidden, hint) or _reveals(" ".join(_words(marked) - _words(flat)), hint)
    ):
        views.append(marked)
    return tuple(dict.fromkeys(views))


@dataclass(frozen=True, slots=True)
class Decoding:
    """Texts decoded from encoded runs, and how many runs were tried (the work done)."""

    texts: tuple[str, ...] = ()
    attempts: int = 0


def _printable(data: bytes) -> str | None:
    """``data`` as text when it reads as words: valid UTF-8, printable, some letters."""
    if len(data) < 6:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    shown = sum(char.isprintable() or char in "\t\n\r" for char in text)
    letters = sum(char.isalpha() for char in text)
    if shown < 0.95 * len(text) or letters < 4 or letters < 0.4 * len(text):
        return None
    return text


def _from_base64(run: str) -> bytes | None:
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        return None
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _from_hex(run: str) -> bytes | None:
    pairs = _HEX_PREFIXED.findall(run) if ("\\x" in run or "0x" in run) else []
    digits = "".join(pairs) if pairs else _HEX_DIGITS.sub("", run)
    try:
        return bytes.fromhex(digits)
    except ValueError:
        return None


def _from_unicode(run: str) -> bytes:
    return "".join(chr(int(code, 16)) for code in run.split("\\u")[1:]).encode("utf-8", "replace")


def _from_percent(run: str) -> bytes | None:
    if len(_ESCAPE.findall(run)) < 3:
        return None
    return unquote(run, errors="replace").encode("utf-8")


# (runs, decoder, a substring every run holds: a text without it is not scanned)
_DECODERS: tuple[tuple[re.Pattern[str], Callable[[str], bytes | None], str], ...] = (
    (_UNICODE_ESCAPES, _from_unicode, "\\u"),
    (_HEX, _from_hex, ""),
    (_PERCENT, _from_percent, "%"),
    (_BASE64, _from_base64, ""),
)


def decoded_texts(text: str) -> Decoding:
    """Printable texts hidden in encoded runs of ``text``, nested runs decoded too, within the
    bounds above."""
    return _decoded(text[:MAX_VIEWED])


# A card text is decoded twice, for credentials (``verdict``) and for instructions: a few
# answers are kept, keyed by the viewed text (at most MAX_VIEWED characters each), so the
# second look is free. A Decoding is frozen, so sharing one is safe.
@lru_cache(maxsize=32)
def _decoded(viewed: str) -> Decoding:
    texts: list[str] = []
    attempts = 0
    level = [viewed]
    for _ in range(MAX_DEPTH):
        following: list[str] = []
        for source in level:
            for pattern, decode, hint in _DECODERS:
                if hint not in source:
                    continue
                for match in pattern.finditer(source):
                    run = match.group(0)
                    if not MIN_RUN // 2 <= len(run) <= MAX_RUN:
                        continue
                    if pattern is _BASE64 and len(run) < MIN_RUN:
                        continue
                    if attempts >= MAX_ATTEMPTS or len(texts) >= MAX_DECODED:
                        return Decoding(tuple(texts), attempts)
                    attempts += 1
                    data = decode(run)
                    found = _printable(data) if data is not None else None
                    if found is not None and found not in texts:
                        texts.append(found)
                        following.append(found)
        level = following
        if not level:
            break
    return Decoding(tuple(texts), attempts)
