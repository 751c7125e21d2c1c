"""The bounded reader: special files refused by type without blocking, sizes, UTF-8, JSON."""

from __future__ import annotations

import io
import json
import os
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from active_memory.bounded_input import (
    MAX_JSON_DEPTH,
    MAX_NUMBER_CHARS,
    open_regular,
    parse_json,
    read_bytes,
    read_json,
    read_stream,
    read_text,
    regular_file_problem,
)
from active_memory.errors import InputRefused
from hostile import HOSTILE_VALUES, hostile_bytes

pytestmark = pytest.mark.timeout(120)
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@needs_fifo
def test_a_fifo_is_refused_by_its_type_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    with pytest.raises(InputRefused, match=r"is a FIFO \(named pipe\), not a regular file"):
        read_json(fifo, what="'run.json'", max_bytes=1024)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_symlink_to_dev_zero_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    link = tmp_path / "run.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(InputRefused, match="is a character device, not a regular file"):
        read_bytes(link, what="'run.json'", max_bytes=1 << 30)


def test_a_socket_and_a_directory_are_named_for_what_they_are(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    path = tmp_path / "s.sock"
    try:
        server.bind(str(path))
        assert regular_file_problem(path) == "is a socket, not a regular file; pass a regular file"
    finally:
        server.close()
    assert regular_file_problem(tmp_path) == (
        "is a directory, not a regular file; pass a regular file"
    )


def test_a_symlink_is_refused_when_links_may_not_be_followed(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_json(link, what="x", max_bytes=10) == {}
    with pytest.raises(InputRefused, match="is a symbolic link"):
        open_regular(link, what="x", follow_symlinks=False)


def test_a_nul_in_a_path_is_one_sentence_not_a_value_error() -> None:
    with pytest.raises(InputRefused, match="has a NUL character in its path"):
        read_bytes("run\0.json", what="'run.json'", max_bytes=10)


def test_a_missing_file_says_so() -> None:
    with pytest.raises(InputRefused, match="does not exist"):
        read_text("/nonexistent/run.json", what="x", max_bytes=10)


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 101)
    with pytest.raises(InputRefused, match="is 101 bytes, over the limit of 100 bytes"):
        read_bytes(big, what="x", max_bytes=100)
    assert read_bytes(big, what="x", max_bytes=101) == b" " * 101


def test_a_stream_is_read_one_byte_past_the_limit_only() -> None:
    stream = io.BytesIO(b"x" * 100_000)
    with pytest.raises(InputRefused, match="more than 4096 bytes"):
        read_stream(stream, what="standard input", max_bytes=4096)
    assert stream.tell() == 4097


def test_text_that_is_not_utf8_names_the_byte_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{\n"a": "caf\xe9"}')
    with pytest.raises(InputRefused, match=r"is not UTF-8 text \(byte 11 on line 2"):
        read_text(path, what="x", max_bytes=100)


def test_encoded_surrogates_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes('"\ud800"'.encode("utf-8", "surrogatepass"))
    with pytest.raises(InputRefused, match="is not UTF-8 text"):
        read_json(path, what="x", max_bytes=100)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 10_000, 1_000_000])
def test_nesting_past_the_limit_is_refused_never_a_recursion_error(depth: int) -> None:
    with pytest.raises(InputRefused, match=f"deeper than {MAX_JSON_DEPTH} levels"):
        parse_json("[" * depth + "]" * depth, what="x")


def test_nesting_at_the_limit_is_read() -> None:
    depth = MAX_JSON_DEPTH
    assert parse_json('{"a":' * (depth - 1) + "[1]" + "}" * (depth - 1), what="x") is not None


@pytest.mark.parametrize("number", ["9" * 5000, "1." + "0" * 5000, "-" + "1" * 4301])
def test_a_number_past_the_length_limit_is_refused(number: str) -> None:
    with pytest.raises(InputRefused, match=f"the limit is {MAX_NUMBER_CHARS}"):
        parse_json(f'{{"revision": {number}}}', what="x")


@pytest.mark.parametrize("text", ['"\\ud800"', '{"title": "a\\udfffb"}', '{"\\udc00": 1}'])
def test_a_lone_surrogate_escape_is_refused(text: str) -> None:
    with pytest.raises(InputRefused, match="lone surrogate escape"):
        parse_json(text, what="x")


def test_a_surrogate_pair_escape_is_text() -> None:
    assert parse_json('"\\ud83d\\ude00"', what="x") == "\U0001f600"


def test_invalid_json_names_line_and_column() -> None:
    with pytest.raises(InputRefused, match=r"^x is not valid JSON \(line 2 column 1: "):
        parse_json("{\n", what="x")


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(hostile_bytes(), HOSTILE_VALUES.map(str.encode)))
def test_fuzz_any_bytes_parse_to_bounded_json_or_one_refusal(data: bytes) -> None:
    refusal = None
    try:
        value = parse_json(data, what="x")
    except InputRefused as refused:
        refusal = str(refused)
    if refusal is not None:
        assert "\n" not in refusal
        return
    # What is accepted is safe to use: it re-encodes as UTF-8 JSON without recursion trouble.
    json.dumps(value, ensure_ascii=False).encode("utf-8")
