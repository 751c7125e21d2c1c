"""Source positions in card text: ``path:123``, "line 42", ``#L10`` anchors.

Also ``L42 of config.py``, ``config.py, line 42`` and traceback frames (``File "app.py", line
12, in main``), "around line 42", "ln 42", ranges with any dash (``lines 10–20``,
``L10—L20``, ``app.py:10-20``), in any compatibility form (full-width digits and colons fold
to ASCII first). The other spellings tools and people use are positions too (``form``):
``app.py(42)`` (compilers), ``app.py:L42``, ``vim +42 app.py``, diff hunk headers
(``@@ -12,7 +12,9 @@``), numeric ``sed``/``awk`` addresses on a file, ``git blame -L 10,20``,
"the 17th line of app.py", and "line 42" in other languages ("ligne 42", "Zeile 42", "línea
42", "строка 42", "第42行", "42行目"…).

Positions go stale with the next edit, so admission refuses them in card text; URLs are exempt
(a permalink is stable). Legacy cards that already carry positions stay readable in the store,
but maintenance must adapt or defer them.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["find_position"]

_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://\S+")
_SOURCE_EXTENSIONS = frozenset(
    {
        "py", "pyi", "pyx", "ipynb", "js", "mjs", "cjs", "jsx", "ts", "tsx", "vue", "svelte", "rs",
        "go", "java", "kt", "kts", "scala", "groovy", "gradle", "c", "h", "cc", "cpp", "cxx", "hh",
        "hpp", "hxx", "m", "mm", "cs", "fs", "vb", "swift", "dart", "rb", "php", "pl", "pm", "lua",
        "r", "jl", "ex", "exs", "erl", "hrl", "hs", "ml", "mli", "clj", "cljs", "elm", "zig", "nim",
        "sh", "bash", "zsh", "fish", "ps1", "bat", "cmd", "sql", "graphql", "proto", "thrift", "tf",
        "tfvars", "hcl", "nix", "md", "mdx", "rst", "txt", "adoc", "json", "jsonl", "yaml", "yml",
        "toml", "ini", "cfg", "conf", "env", "xml", "html", "htm", "css", "scss", "sass", "less",
        "cmake", "mk", "make", "lock", "csv", "tsv",
    }
)  # fmt: skip
_EXTENSIONLESS = frozenset(
    {"makefile", "dockerfile", "containerfile", "rakefile", "gemfile", "justfile", "procfile",
        "vagrantfile", "jenkinsfile", "brewfile", "podfile", "build", "workspace"}
)  # fmt: skip
# path:123 or path:12:5, the path made of ordinary path characters.
_FILE_LINE = re.compile(r"(?<![\w./~-])((?:[\w.~-]+/)*[\w.~-]+):(\d+)(?::\d+)?(?!\.?\d)")
_DASH = "\\-\u2010-\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d~"
# "line 42", "line no. 42", "line #42" (not "line1", an identifier), "ln 42", "at l. 42".
_LINE_WORDS = re.compile(
    r"(?i)\blines?(?:\s+(?:no\.?\s*|number\s+|#\s*)?|\s*(?:no\.|#)\s*)\d+\b"
    r"|\bln\.?\s+\d+\b|\bln\.\d+\b"
    r"|(?i:\b(?:on|at|near|around|about|from|to|through)\s+l\.\s*\d+\b)"
)
# A line of data, not of source: "line 1 of every CSV file", "line 2 of the input". A line of
# any file, or of a kind of data, moves with no edit; a named source file is still a position.
_DATA_LINE = re.compile(
    rf"(?i)\s*(?:(?:[{_DASH}]|\bto\b|\bthrough\b|\band\b)\s*\d+\s*)?(?:of|in|from)\s+(?:(?:every|each|all|any|a|an)\b|"
    r"(?:the|its|their|your)\s+(?:[\w-]+\s+){0,2}?(?:csv|tsv|input|output|stdin|stdout|stderr|"
    r"stream|upload|response|request|body|payload|message|e-?mail|spreadsheet|sheet|form|address|"
    r"heredoc|data|dataset|export|feed|log|logs|header|headers|page|document)s?\b(?!\.))"
)
_PATH_TOKEN = re.compile(r"[\w.~/-]+")
_ANCHOR = re.compile(
    r"#L\d+\b"  # #L10, #L10-L20
    rf"|\bL\d+(?:C\d+)?\s*[{_DASH}]\s*L?\d+\b"  # L10-L20, L10–L20
    r"|(?<=\.)[A-Za-z][A-Za-z0-9]{0,9}\s+L\d+\b"  # config.py L10
    r"|\bL\d+(?:C\d+)?\s+(?:of|in)\s+[`'\"]?[\w./~-]*\.[A-Za-z][A-Za-z0-9]{0,9}\b"  # L42 of a.py
    r"|\bL\d+:\d+\b"  # L12:5
)
# A range after a path: app.py:10-20, app.py:10–20.
_FILE_RANGE = re.compile(rf"(?<![\w./~-])((?:[\w.~-]+/)*[\w.~-]+):(\d+)\s*[{_DASH}]\s*\d+")


# Tools and prose that name a line without the word "line" in English (see the docstring),
# each after the lowercase substrings one of which a text must hold for it to apply: a test in
# C that spares most cards the pattern.
# Editors whose names are not also words read before "+1" in prose ("one more +1", "joe +1").
_EDITORS = r"(?:n?vim?|vi|nano|pico|emacs(?:client)?|mcedit|kak|hx|less)"
_FORMS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    (("+",), re.compile(
        rf"\b{_EDITORS}\s+(?:-{{1,2}}[\w=-]+\s+){{0,3}}\+\d+\b"  # vim +42 app.py
        rf"|\b{_EDITORS}\s+(?:-{{1,2}}[\w=-]+\s+){{0,3}}[\w./~-]+\s+\+\d+\b")),  # vim app.py +42
    (("@@",), re.compile(r"@@\s*-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@")),  # a diff hunk header
    (("-l",), re.compile(r"\bgit\s+(?:blame|log|annotate)\b[^\n|;&]{0,80}?\s-L\s*\d+")),
    (("nr",), re.compile(r"\bawk\b[^\n|;&]{0,40}?\bNR\s*[=<>!]=?\s*\d+")),  # awk 'NR==42'
    # la 3e ligne, die 17. Zeile, la 17ª línea: a numeric ordinal before the word (not a count:
    # "3 líneas"); and "line 42" in other languages: "riga" only before a number, Dutch "regel"
    # only before "van" (German "Regel 5" is a rule)
    (("lign", "zeil", "ínea", "inea", "linha", "righe", "riga", "regel", "wiersz", "satır",
      "satir", "строк", "рядо", "рядк"), re.compile(
        r"(?i:\b\d+(?:e|er|ème)\s+lignes?\b|\b\d+\.\s*zeilen?\b|\b\d+[ªºao]\s*l[ií]neas?\b)"
        r"|(?i:\b(?:lignes?|zeilen?|l[ií]neas?|linhas?|righe|riga|wiersz[ua]?|sat[ıi]r|"
        r"строк[аеиу]?|рядок|рядку)\s*(?:n[°o]\.?\s*|#\s*)?\d+\b|\bregel\s*\d+\s+van\b)")),
    (("行", "번째"), re.compile(r"第\s*\d+\s*行|\d+\s*行目|\d+\s*번째\s*줄")),
)  # fmt: skip
# "the 17th line of", "the third line in app.py": an ordinal, of data (the 2nd line of the
# output) or of a named source file; a spelled one counts only with the file named.
_ORDINAL = re.compile(r"(?i)\b\d+(?:st|nd|rd|th)\s+lines?\b")
_ORDINAL_WORD = re.compile(
    r"(?i)\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\s+lines?\s+"
    r"(?:of|in)\s+[`'\"]?([\w./~-]+)"
)
# A numeric sed address (sed -n '10,20p' app.py, sed -i '12d' app.py), not a /pattern/ one.
_SED = re.compile(r"\bsed\s+(?:-[a-zE]+\s+)*(?:-e\s+)?['\"]?\d+(?:\s*,\s*(?:\d+|\$))?\s*[pdsaic!]")
# A compiler's file(line) or file(line,column): app.py(42), Program.cs(12,5); not a call on an
# object (self.m(3)), whose "extension" is a method name.
_FILE_PAREN = re.compile(r"(?<![\w./~-])((?:[\w.~-]+/)*[\w.~-]+)\((\d+)(?:,\s*\d+)?\)")
_FILE_L = re.compile(r"(?<![\w./~-])((?:[\w.~-]+/)*[\w.~-]+)(?::L|#L?)(\d+)\b")
_OBJECTS = frozenset({"self", "this", "cls", "super", "obj", "it"})
# A manual page's section: resolv.conf(5), nsswitch.conf(5), not a position.
_MAN_PAGE = re.compile(r"\.conf\([1-9]\)")


def _is_source_path(token: str) -> bool:
    name = token.rsplit("/", 1)[-1]
    if "." in name.strip("."):
        extension = name.rsplit(".", 1)[-1].lower()
        return extension in _SOURCE_EXTENSIONS or ("/" in token and extension.isalpha())
    return name.lower() in _EXTENSIONLESS or ("/" in token and not token.startswith("/"))


def _data_line(text: str, end: int) -> bool:
    """Whether the line number ending at ``end`` is of data (see :data:`_DATA_LINE`) rather
    than of a source file."""
    match = _DATA_LINE.match(text, end)
    if match is None:
        return False
    clause = re.split(r"[;:!?]|\.(?:\s|$)", text[match.end() : match.end() + 80], maxsplit=1)[0]
    return not any(_is_source_path(token.strip(".")) for token in _PATH_TOKEN.findall(clause))


def _sed_on_stream(text: str, start: int) -> bool:
    # cmd | sed -n 2p reads a stream (data), not a source file.
    return text[max(0, start - 8) : start].rstrip().endswith("|")


def _form(text: str) -> bool:
    lowered = text.lower()
    for hints, pattern in _FORMS:
        if any(hint in lowered for hint in hints) and pattern.search(text):
            return True
    if "line" in lowered:
        if any(not _data_line(text, m.end()) for m in _ORDINAL.finditer(text)):
            return True
        if any(_is_source_path(m.group(1).strip(".")) for m in _ORDINAL_WORD.finditer(text)):
            return True
    if "sed" in lowered and any(not _sed_on_stream(text, m.start()) for m in _SED.finditer(text)):
        return True
    for hint, pattern in (("(", _FILE_PAREN), ("#", _FILE_L), (":l", _FILE_L)):
        if hint not in lowered:
            continue
        for match in pattern.finditer(text):
            path = match.group(1)
            stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
            man_page = _MAN_PAGE.match(match.string, match.end(1) - 5) is not None
            if (
                "." in path.strip(".")
                and stem not in _OBJECTS
                and not man_page
                and (_is_source_path(path))
            ):
                return True
    return False


def find_position(text: str) -> str | None:
    """The kind of source position in ``text`` (``file_line``, ``line_words``, ``anchor``,
    ``form``: the other spellings of the module docstring).

    Hosts and ports (``localhost:8080``), versions (``python:3.11``) and times (``12:30``) are
    not positions; neither is anything inside a URL.
    """
    folded = text if text.isascii() else unicodedata.normalize("NFKC", text)
    without_urls = _URL.sub(" ", folded)
    for pattern in (_FILE_LINE, _FILE_RANGE):
        for match in pattern.finditer(without_urls):
            if _is_source_path(match.group(1)):
                return "file_line"
    for match in _LINE_WORDS.finditer(without_urls):
        if not _data_line(without_urls, match.end()):
            return "line_words"
    if _ANCHOR.search(without_urls):
        return "anchor"
    if _form(without_urls):
        return "form"
    return None
