"""Source positions in card text: ``path:123``, "line 42", ``#L10`` anchors.

Also ``L42 of config.py``, ``config.py, line 42`` and traceback frames (``File "app.py", line
12, in main``), "around line 42", "ln 42", ranges with any dash (``lines 10–20``,
``L10—L20``, ``app.py:10-20``), in any compatibility form (full-width digits and colons fold
to ASCII first).

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


def find_position(text: str) -> str | None:
    """The kind of source position in ``text`` (``file_line``, ``line_words``, ``anchor``).

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
    return None
