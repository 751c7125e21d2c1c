"""Frame look-alikes: what in card text could open, close or imitate a tag an agent trusts.

Cards reach agents inside our ``<active_memory>`` frame, and that frame sits inside other
frames: a harness's tool results (``</function_results>``, ``</tool_result>``), chat templates'
turn markers (``<|im_start|>``, ``[INST]``). A card that closes one of them and opens a fake
turn speaks with the harness's voice. So in card text:

* every invisible or control character goes (:func:`strip_invisible`): format characters
  (Unicode category Cf: zero-width, bidi, tags), C0 and C1 controls, fillers and variation
  selectors; admission and import refuse them outright (:func:`character_problem`);
* a tag is escaped (:func:`escape_frame`, used by the renderer) or refused
  (:func:`find_frame_tag`, used by the screens) when its bracket is a look-alike (TR39's
  confusables of ``<`` and ``>`` plus the angle brackets it does not list: U+2770/2771,
  double and mathematical angle brackets), when its name holds a letter from another script,
  or when its name is one of :data:`FRAME_NAMES` (ours and other frames'), whatever the case or
  separator (none: ``</activememory>`` is ours); between angle quotation marks (``« »``,
  ``‹ ›``, ``《 》``), which prose quotes words with, only a frame name or a word mixing scripts;
* a square turn marker (``[INST]``, ``[/INST]``, in look-alike square brackets too) and the end
  of a Llama turn before the next marker (``</s><s>``) are refused, and so is a speaker opening
  a sentence (``Human:``, by the instruction screen); the renderer escapes all three
  (``&#91;INST&#93;``, ``&lt;/s&gt;``, ``Human&#58;``), and ``<<SYS>>`` whole.

The renderer escapes at least every marker the screens refuse, and also names ordinary advice
may use that some frame uses too (``<user_id>``, ``<s>``): those are admitted and delivered as
``&lt;user_id&gt;``. ``Vec<u8>`` and ``a < b`` stay as they are.

The recall renderer runs on the hook path, a fresh process per tool call, so this module
imports nothing at import time; ``re`` and ``unicodedata`` are loaded only for text that holds
a bracket, a non-ASCII character, or a colon after a speaker's name. The look-alike sets are
spelled out here, not derived from the confusables data at run time; a test checks they hold
every TR39 confusable of ``<``, ``>``, ``[``, ``]`` and ``/``.
"""

from __future__ import annotations

__all__ = [
    "CLOSERS",
    "FRAME_NAMES",
    "OPENERS",
    "SLASHES",
    "SQUARE_CLOSERS",
    "SQUARE_OPENERS",
    "character_problem",
    "escape_frame",
    "find_frame_tag",
    "needs_escape",
    "strip_invisible",
]

# TR39 confusables of "<" (NFKC first), then the angle brackets TR39 does not list.
OPENERS = (
    "<\u02c2\u1438\u16b2\u2039\u226a\u22d8\u276e\u2aa5\ufe64\uff1c\U0001d236"
    "\u00ab\u2329\u27e8\u27ea\u2770\u276c\u29fc\u2991\u2993\u3008\u300a\ufe3d\ufe3f\u29d8"
)
CLOSERS = (
    ">\u02c3\u1433\u203a\u226b\u22d9\u276f\u2a20\u2aa5\ufe65\uff1e\U00016f3f\U0001d237"
    "\u00bb\u232a\u27e9\u27eb\u2771\u276d\u29fd\u2992\u2994\u3009\u300b\ufe3e\ufe40\u29d9"
)
# TR39 confusables of "[" and "]" (NFKC first), then the square brackets TR39 does not list:
# chat templates' turn markers ([INST], [/INST], [TOOL_RESULTS]) are written with them.
SQUARE_OPENERS = "[\uff3b\u2772\u3014\u27e6\u3010\u3016\u301a\u2045\u298b\u298d\u298f\ufe47"
SQUARE_CLOSERS = "]\uff3d\u2773\u3015\u27e7\u3011\u3017\u301b\u2046\u298c\u298e\u2990\ufe48"
# TR39 confusables of "/" that are not fractions or units, and the backslash.
SLASHES = (
    "/\\\u1735\u2041\u2044\u2215\u2571\u27cb\u29f6\u29f8\u2cc6\u2f03\u3033\u30ce\u31d3"
    "\u4e3f\uff0f\uff89\U0001d23a\u29f5\u2216\u29f9\u2afb\u2afd\u2cc7"
)
# Tag names of our frame, of tool-use and chat-template frames, and of role markers, folded:
# lower case, any run of separators read as "_". A tag of one of these is refused in card text.
FRAME_NAMES = frozenset(
    {
        "active_memory", "system", "assistant", "developer", "human", "tool_result",
        "tool_results", "tool_use", "tool_call", "tool_calls", "tool_response", "tool_output",
        "function_call", "function_calls", "function_result", "function_results",
        "function_response", "function_output", "invoke", "im_start", "im_end", "im_sep",
        "system_reminder", "system_prompt", "system_message", "start_of_turn", "end_of_turn",
        "antml", "instruction", "instructions", "inst", "sys", "endoftext", "thinking",
        "search_results", "untrusted", "bos", "eos",
    }
)  # fmt: skip
# The same names with every separator removed: <activememory>, <a_c_t_i_v_e memory> and
# <Active-Memory> all spell ours.
_FRAME_KEYS = frozenset(name.replace("_", "") for name in FRAME_NAMES)
# Square-bracket turn markers: [INST], [/INST], Mistral's [TOOL_CALLS], [AVAILABLE_TOOLS]...
_SQUARE_KEYS = frozenset(
    {"inst", "toolcalls", "toolresults", "availabletools", "systemprompt", "toolcontent"}
)
# Names ordinary advice may put in angle brackets (<user_id>, <output>/report.json) that some
# frame also uses: not refused, but escaped when a card is rendered, as is any name that
# starts with a frame name.
_ESCAPED_NAMES = FRAME_NAMES | {
    "user", "model", "tool", "tools", "function", "functions", "parameter", "parameters",
    "result", "results", "output", "prompt", "turn", "message", "messages", "document",
    "documents", "observation", "context", "policy", "admin", "root", "reminder", "answer",
    "response", "s",
}  # fmt: skip
_ESCAPED_KEYS = frozenset(name.replace("_", "") for name in _ESCAPED_NAMES)

# Angle quotation marks: « », ‹ ›, 《 》, 〈 〉 (U+2329/232A and the vertical forms read as these
# after NFKC). French, Russian, Chinese and Japanese prose quotes words with them ("« ok »",
# 《手册》), so between them only a frame name, or a name spelling one with another script's
# letters, is a tag; the other look-alike brackets are never punctuation and always are.
_QUOTES = "\u00ab\u00bb\u2039\u203a\u300a\u300b\u3008\u3009"

_INVISIBLE_EXTRA = "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0" + "".join(
    map(chr, range(0xFE00, 0xFE10))
)
_NAME_TAIL = r"[\w:.\-]{0,64}"
_SEPARATORS = r"[\s_\-.:]+"


def _is_invisible(char: str) -> bool:
    import unicodedata

    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return char != "\t"
    if 0xE0100 <= code <= 0xE01EF or char in _INVISIBLE_EXTRA:
        return True
    return unicodedata.category(char) == "Cf"


def strip_invisible(text: str) -> str:
    """``text`` without format (Cf) and control characters, fillers or variation selectors;
    a line break, tab or other control becomes a space so words stay apart."""
    if text.isascii() and text.isprintable():
        return text
    out: list[str] = []
    for char in text:
        if not _is_invisible(char):
            out.append(char)
        elif char in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x85":
            out.append(" ")
    return "".join(out)


def character_problem(text: str) -> str | None:
    """``control_character`` (C0 other than tab and newline, DEL, C1) or ``format_character``
    (category Cf, fillers, variation selectors) in ``text``, else None."""
    if text.isascii() and text.isprintable():
        return None
    import unicodedata

    for char in text:
        code = ord(char)
        if (code < 0x20 and char not in "\t\n") or 0x7F <= code <= 0x9F:
            return "control_character"
        if char in _INVISIBLE_EXTRA or 0xE0100 <= code <= 0xE01EF:
            return "format_character"
        if code > 0x7F and unicodedata.category(char) == "Cf":
            return "format_character"
    return None


def _fold_name(name: str) -> str:
    import re

    return re.sub(_SEPARATORS, "_", name.casefold()).strip("_")


def _frame_name(name: str, *, loose: bool) -> bool:
    if not name.isascii():
        return True  # another script's letters in a tag name are never ordinary
    folded = _fold_name(name)
    parts = [part.strip("_") for part in folded.split(":")]
    for part in (folded, *parts):
        key = part.replace("_", "").replace(":", "")
        if part in FRAME_NAMES or key.startswith("antml") or not _FRAME_KEYS.isdisjoint(_keys(key)):
            return True
    if not loose:
        return False
    words = folded.replace(":", "_").split("_")
    return any("".join(words[:n]) in _ESCAPED_KEYS for n in range(1, min(len(words), 4) + 1))


# Digits written for letters: </act1ve_mem0ry> spells ours.
_DIGIT_LETTERS = str.maketrans("0345789", "oeastbg")


def _keys(key: str) -> tuple[str, ...]:
    """``key`` and its readings with digits as letters ("1" as "i" and as "l")."""
    if not any(char.isdigit() for char in key):
        return (key,)
    lettered = key.translate(_DIGIT_LETTERS)
    return (key, lettered.replace("1", "i"), lettered.replace("1", "l"))


def _square_name(name: str, *, loose: bool) -> bool:
    """Whether ``[name]`` is a turn marker: [INST], [/INST], [TOOL_CALLS], in any case or
    separator; when rendering, also any frame name or a name in another script."""
    if not name.isascii():
        return loose and len(name) <= 32
    keys = _keys(_fold_name(name).replace("_", "").replace(":", ""))
    return not _SQUARE_KEYS.isdisjoint(keys) or (loose and not _FRAME_KEYS.isdisjoint(keys))


def _normalised(text: str) -> str:
    if text.isascii():
        return text
    import unicodedata

    return strip_invisible(unicodedata.normalize("NFKC", text))


def _opener_pattern() -> str:
    # The bracket, an optional slash, then a name (a letter of any script first, up to four
    # words: "a c t i v e" is not, "active memory" is) or a "|".
    return (
        rf"([{OPENERS}])(\s*[{SLASHES}]?\s*)"
        rf"((?:[^\W\d]{_NAME_TAIL}(?:{_SEPARATORS}[^\W\d]{_NAME_TAIL}){{0,3}})|\|)"
    )


def _square_pattern() -> str:
    # [INST], [ /INST ], ［INST］: a bracket, an optional slash, a name, the closing bracket.
    opening, closing = "\\" + SQUARE_OPENERS, "\\" + SQUARE_CLOSERS  # "\[" and "\]" in a class
    return rf"([{opening}])(\s*[{SLASHES}]?\s*)([^\W\d][\w:.\- ]{{0,40}}?)(\s*)([{closing}])"


# The end of a Llama turn, followed by the next marker: </s><s>, </s>[INST], </s> at the end.
_END_OF_TURN = r"<\s*/\s*s\s*>\s*(?:[<\[]|$)"
# A speaker's name opening the text or a sentence: "Human:", "Assistant:". Admission refuses
# system, assistant, human and developer (on folded text); rendering also writes these and any
# word holding another script's letters without the colon.
_ROLE_PREFIX = r"(^|[.!?]\s+|\n\s*)(system|assistant|human|developer|user|model|tool)(\s*):"
_ROLE_PREFIX_OTHER = r"(^|[.!?]\s+|\n\s*)([^\W\d_]{2,12})(\s*):"


def _closer_pattern() -> str:
    return rf"((?:[^\W\d]{_NAME_TAIL}|\|)\s*)([{CLOSERS}])"


def _quoted_tag(name: str, *, loose: bool) -> bool:
    """Whether a name between angle quotation marks is a tag: a frame name once accents are
    taken off (``« ok »``, ``« validé »``, ``« готово »`` are words), or a word mixing ASCII
    letters with another script's (``«ѕystem»``)."""
    if name.isascii():
        return _frame_name(name, loose=loose)
    import re
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", name)
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    if bare.isascii():
        return _frame_name(bare, loose=loose)
    for word in re.split(_SEPARATORS, bare):
        latin = any(char.isascii() and char.isalpha() for char in word)
        if latin and any(not char.isascii() and char.isalpha() for char in word):
            return True
    return False


def _suspicious_open(bracket: str, slash: str, name: str, *, loose: bool) -> bool:
    if slash.strip() not in ("", "/") or name == "|":
        return True
    if bracket in _QUOTES:
        return _quoted_tag(name.rstrip(":.-"), loose=loose)
    return bracket != "<" or _frame_name(name.rstrip(":.-"), loose=loose)


def _suspicious_close(name: str, bracket: str, *, loose: bool) -> bool:
    token = name.rstrip()
    if token.endswith("|"):
        return True
    word = token.rsplit("/", 1)[-1].rstrip(":.-")
    if bracket in _QUOTES:
        return bool(word) and _quoted_tag(word, loose=loose)
    return bracket != ">" or (bool(word) and _frame_name(word, loose=loose))


_BRACKETS = frozenset(OPENERS + CLOSERS + SQUARE_OPENERS + SQUARE_CLOSERS)


# The ASCII characters escaping may act on: the brackets, and the colon after a speaker.
_ASCII_MARKS = (*sorted(char for char in _BRACKETS if char.isascii()), ":")


def _has_bracket(text: str) -> bool:
    return not _BRACKETS.isdisjoint(text)


def needs_escape(text: str) -> bool:
    """Whether :func:`escape_frame` (and the renderer's one-line folding) could change
    ``text``: False for printable ASCII holding no bracket and no colon, the usual card text,
    which is then framed as it is without a look at each of the steps."""
    if not (text.isascii() and text.isprintable()):
        return True
    # One search per character (in C) rather than a set lookup per character of the text.
    for mark in _ASCII_MARKS:  # noqa: SIM110 (any() over a generator costs as much again)
        if mark in text:
            return True
    return False


_SPEAKERS = ("system", "assistant", "human", "developer", "user", "model", "tool")


def _escape_speaker(text: str) -> str:
    if ":" not in text:
        return text
    if text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in _SPEAKERS):
            return text
    import re

    def speaker(match: re.Match[str]) -> str:
        start, word, space = match.groups()
        return f"{start}{word}{space}&#58;"

    escaped = re.sub(_ROLE_PREFIX, speaker, text, flags=re.IGNORECASE)
    if escaped.isascii():
        return escaped

    def other(match: re.Match[str]) -> str:
        return match.group(0) if match.group(2).isascii() else speaker(match)

    return re.sub(_ROLE_PREFIX_OTHER, other, escaped)


def escape_frame(text: str) -> str:
    """``text`` normalised (NFKC, invisible characters gone) with every suspicious tag bracket
    written as ``&lt;``/``&gt;`` (``&#91;``/``&#93;`` for square turn markers) and a speaker's
    name opening a sentence (``Human:``) written without its colon (``Human&#58;``); ordinary
    angle brackets stay."""
    flat = _escape_speaker(_normalised(text))
    if not _has_bracket(flat):
        return flat
    import re

    def opened(match: re.Match[str]) -> str:
        bracket, slash, name = match.groups()
        if _suspicious_open(bracket, slash, name, loose=True):
            return "&lt;" + slash + name
        return match.group(0)

    def closed(match: re.Match[str]) -> str:
        name, bracket = match.groups()
        return name + "&gt;" if _suspicious_close(name, bracket, loose=True) else match.group(0)

    def squared(match: re.Match[str]) -> str:
        opener, slash, name, space, closer = match.groups()
        look_alike = opener != "[" or closer != "]"
        if _square_name(name, loose=True) or (look_alike and _frame_name(name, loose=True)):
            return f"&#91;{slash}{name}{space}&#93;"
        return match.group(0)

    escaped = re.sub(_opener_pattern(), opened, flat)
    escaped = re.sub(_closer_pattern(), closed, escaped)
    escaped = re.sub(_square_pattern(), squared, escaped)
    # The outer half of a double bracket (<<SYS>>, <</SYS>>) goes with the inner one.
    escaped = re.sub(rf"[{OPENERS}](?=&lt;)", "&lt;", escaped)
    return re.sub(rf"(?<=&gt;)[{CLOSERS}]", "&gt;", escaped)


def find_frame_tag(text: str) -> bool:
    """Whether ``text`` holds a frame tag: a look-alike bracket, another script's letters in
    the name, or a name in :data:`FRAME_NAMES` (``<u8>``, ``<user_id>`` are not)."""
    flat = _normalised(text)
    if not _has_bracket(flat):
        return False
    import re

    for match in re.finditer(_opener_pattern(), flat):
        if _suspicious_open(*match.groups(), loose=False):
            return True
    if any(
        _suspicious_close(*match.groups(), loose=False)
        for match in re.finditer(_closer_pattern(), flat)
    ):
        return True
    for match in re.finditer(_square_pattern(), flat):
        opener, _, name, _, closer = match.groups()
        if _square_name(name, loose=False) or (
            (opener != "[" or closer != "]") and _frame_name(name, loose=False)
        ):
            return True
    return re.search(_END_OF_TURN, flat) is not None
