"""The substring tests path rewriting makes before its patterns: a filter, never a change of
answer. Each text is rewritten as the patterns alone would rewrite it, run on every text."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from active_memory.evidence.paths import _ANSI, _HOMES, _WINDOWS_HOMES, PathRewriter

WORKSPACE = "/home/alice/shop"
ALSO = "/srv/build/shop-copy"

# Texts built from the folders, their parts and the characters the patterns' edges look at.
_PIECES = [
    WORKSPACE, ALSO, "/home/", "/home", "/Users/", "/Users", "Users", "/root", "root", "/",
    "alice", "bob", "shop", "shop-2", "/src/app.py", "C:", "\\", "\\\\", "c:\\Users\\carol",
    "-home-alice-shop", "-", ".", "_", " ", "\n", '"', "'", "`", ":", "\x1b[90m", "é", "ü/",
]  # fmt: skip
TEXTS = st.lists(st.sampled_from(_PIECES), max_size=10).map("".join)


def _patterns_only(rewriter: PathRewriter, value: str) -> str:
    """What ``rewriter.text`` gives without its substring tests."""
    if "/" not in value and "\\" not in value:
        return value
    value = _ANSI.sub("", value)
    for _folder, inside, itself in rewriter._trees:
        value = itself.sub(".", inside.sub("", value))
    value = _WINDOWS_HOMES.sub("~", _HOMES.sub("~", value))
    return value if rewriter._encoded is None else rewriter._encoded.sub("-~", value)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_the_substring_tests_rewrite_as_the_patterns_do(text: str) -> None:
    rewriter = PathRewriter(WORKSPACE, ALSO)
    assert rewriter.text(text) == _patterns_only(rewriter, text)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_home_only_rewrites_as_the_patterns_do(text: str) -> None:
    rewriter = PathRewriter(None)
    expected = text
    if "/" in text or "\\" in text:
        expected = _WINDOWS_HOMES.sub("~", _HOMES.sub("~", _ANSI.sub("", text)))
    assert rewriter.home_only(text) == expected
