"""Source positions in every spelling; hosts, versions, times and URLs are not positions, nor
are identifiers (``line1``) or lines of data (line 1 of every CSV file)."""

from __future__ import annotations

import pytest

from active_memory.screening.positions import find_position

POSITIONS = [
    ("src/app/config.py:120", "file_line"),
    ("config.py:12:5", "file_line"),
    ("app.py:10\u201320", "file_line"),
    ("app.py\uff1a12", "file_line"),
    ("the loop on line 42", "line_words"),
    ("lines 10\u201320", "line_words"),
    ("config.py, line 88", "line_words"),
    ('File "app/main.py", line 12, in main', "line_words"),
    ("around line 300", "line_words"),
    ("ln 42 of the handler", "line_words"),
    ("line no. 17", "line_words"),
    ("#L10", "anchor"),
    ("L10\u2014L20", "anchor"),
    ("L42 of config.py", "anchor"),
    ("config.py L10", "anchor"),
    ("app.py line 3", "line_words"),
    ("line 42 of src/app.py", "line_words"),
    ("line 3 of the header in config.py", "line_words"),
    ("app.py:42", "file_line"),
    # The other spellings: compilers, editors, diffs, sed/awk/blame, ordinals, other languages.
    ("Program.cs(12,5): error CS1002", "form"),
    ("see src/app.py(42) for the parser", "form"),
    ("open src/app.py:L42", "form"),
    ("src/app.py#L42 holds it", "anchor"),
    ("src/app.py#42 holds it", "form"),
    ("vim +42 src/app.py", "form"),
    ("nvim src/app.py +42", "form"),
    ("emacs +120 main.c", "form"),
    ("@@ -12,7 +12,9 @@ def main", "form"),
    ("sed -n '10,20p' src/app.py", "form"),
    ("sed -i '12d' config.py", "form"),
    ("sed -n 42p main.go", "form"),
    ("awk 'NR==42' src/app.py", "form"),
    ("git blame -L 10,20 src/app.py", "form"),
    ("the 17th line of x.py", "form"),
    ("the third line of setup.py", "form"),
    ("ligne 42 de app.py", "form"),
    ("la 3e ligne de app.py", "form"),
    ("Zeile 42 in app.py", "form"),
    ("die 17. Zeile von app.py", "form"),
    ("la línea 42 de app.py", "form"),
    ("la 17ª línea de app.py", "form"),
    ("regel 19 van deploy.sh", "form"),
    ("строка 42 в app.py", "form"),
    ("第42行", "form"),
    ("42行目を見る", "form"),
]
NOT_POSITIONS = [
    "localhost:8080",
    "python:3.11-slim",
    "12:30 UTC",
    "/v2/charges",
    "https://github.com/x/y/blob/main/a.py#L10",
    "Use L2 regularisation",
    "the L1 cache",
    "in a few lines of code",
    "redis at cache:6379",
    "Name the buffers line1 and line2 in the diff helper.",
    "The parser reads the header from line 1 of every CSV file.",
    "The importer skips line 1 of each uploaded spreadsheet.",
    "Read line 2 of the response body for the status.",
    "lines 1-3 of each upload are headers",
    "Lines 1 to 3 of every generated file hold the license header.",
    "python3.11",
    "v1.2:3",
    "a 16:9 ratio",
    "HTTP/1.1",
    "the first line of the commit message",
    "line endings",
    "sed -n '/pattern/p' app.py",
    "git log | sed -n 2p",
    "self.retry(3) wraps it",
    "time.sleep(5)",
    "np.zeros(3)",
    "the 2nd line of the output",
    "2. Line endings must be LF",
    "less +F server.log",
    "Use sed 's/v1.2/v1.3/' on the changelog",
    "issue #42",
    "Zeilenumbruch",
    "@@ marks a hunk header",
    "needs one more +1 from a reviewer",
    "3 líneas de código bastan",
    "Regel 5 der Styleguide verbietet das",
    "see resolv.conf(5) for the search order",
]


@pytest.mark.parametrize(("text", "kind"), POSITIONS)
def test_positions_are_found(text: str, kind: str) -> None:
    assert find_position(text) == kind


@pytest.mark.parametrize("text", NOT_POSITIONS)
def test_hosts_versions_times_and_urls_are_not_positions(text: str) -> None:
    assert find_position(text) is None
