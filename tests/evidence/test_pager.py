from __future__ import annotations

import threading
from pathlib import Path

import pytest

from active_memory.errors import EvidenceCancelled, EvidenceError
from active_memory.evidence.pager import CancelToken, PageLimits, iter_pages, read_page


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return path


def test_pages_hold_at_most_max_records(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [f'{{"n": {i}}}' for i in range(25)])
    pages = list(iter_pages(path, PageLimits(max_records=10)))
    assert [len(page.lines) for page in pages] == [10, 10, 5]
    assert [line.number for page in pages for line in page.lines] == list(range(1, 26))
    assert pages[-1].done
    assert not pages[0].done


def test_a_page_stops_once_it_holds_max_bytes(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", ["x" * 100] * 10)
    pages = list(iter_pages(path, PageLimits(max_bytes=250)))
    assert [len(page.lines) for page in pages] == [3, 3, 3, 1]


def test_an_over_long_line_is_cut_and_the_next_line_is_intact(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", ["a" * 10_000, "after", "é" * 40])
    limits = PageLimits(max_line_bytes=65)
    lines = [line for page in iter_pages(path, limits) for line in page.lines]
    assert lines[0].cut
    assert lines[0].size == 10_000
    assert lines[0].text == "a" * 65
    assert (lines[1].text, lines[1].cut, lines[1].number) == ("after", False, 2)
    # 65 bytes split the 33rd two-byte character: the half character is dropped, not invented.
    assert lines[2].cut
    assert lines[2].text == "é" * 32
    assert lines[2].size == 80


def test_blank_lines_are_skipped_but_counted(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", ["one", "", "   ", "four"])
    lines = [line for page in iter_pages(path) for line in page.lines]
    assert [(line.number, line.text) for line in lines] == [(1, "one"), (4, "four")]


def test_read_page_continues_from_the_previous_offset(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [str(i) for i in range(7)])
    limits = PageLimits(max_records=3)
    first = read_page(path, limits=limits)
    second = read_page(path, first.next_offset, first.next_line, limits)
    assert [line.text for line in second.lines] == ["3", "4", "5"]
    assert second.lines[0].number == 4


def test_last_line_without_newline_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\ntwo")
    assert [line.text for page in iter_pages(path) for line in page.lines] == ["one", "two"]


def test_cancellation_stops_between_pages(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", [str(i) for i in range(100)])
    token = CancelToken()
    pages = iter_pages(path, PageLimits(max_records=10), token)
    assert len(next(pages).lines) == 10
    token.cancel()
    with pytest.raises(EvidenceCancelled):
        next(pages)


def test_a_threading_event_is_a_cancellation_token(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", ["x"])
    event = threading.Event()
    event.set()
    with pytest.raises(EvidenceCancelled, match="cancelled"):
        next(iter_pages(path, cancel=event))


def test_limits_must_be_positive() -> None:
    with pytest.raises(EvidenceError, match="max_records"):
        PageLimits(max_records=0)
