"""The failure words checked before the failure pattern: a filter, never a change of answer."""

from __future__ import annotations

from hypothesis import given, strategies as st

from active_memory.evidence.salience import _FAILURE, _FAILURE_WORDS, _failed

# One text per alternative of the pattern (a new alternative adds its text here; _FAILURE_WORDS
# is derived from the pattern), each a failure it must still find.
FAILURES = [
    "[error] build broke",
    "Traceback (most recent call last):\n  File 'x.py'",
    "  fatal: not a git repository",
    "panic: runtime error",
    "3 FAILED, 2 passed",
    "=== FAILURES ===",
    "ERROR collecting tests",
    "ValueError: bad input",
    "RuntimeException thrown",
    "process exit code 2",
    "exit status 1",
    "bash: foo: command not found",
    "cat: x: No such file or directory",
    "Permission denied (publickey)",
    "the change was rejected by review",
    "request timed out after 30s",
    "module not found",
]


def test_every_alternative_of_the_pattern_is_found_through_the_words() -> None:
    for text in FAILURES:
        assert _FAILURE.search(text), text
        assert _failed(text), text


def test_a_text_without_any_word_is_no_failure() -> None:
    assert not _failed("compiled 12 files in 0.4s\nall checks passed")


# Texts built from the words, their parts and the characters the pattern's edges look at.
_PIECES = [
    *_FAILURE_WORDS,
    *(word[: len(word) // 2] for word in _FAILURE_WORDS),
    "code ", "status ", "1", "0", "(most recent call last)", "[", "]", "directory", "command ",
    "was ", "is ", "Value", "x", " ", "\n", "_", "Permission denied", "denied", ":",
]  # fmt: skip


@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_the_words_decide_as_the_pattern_does(text: str) -> None:
    assert _failed(text) == (_FAILURE.search(text) is not None)
