"""read_file windows: bounded memory on huge lines, cut markers, line endings, key blocks."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from active_memory.agents.providers.base import ToolCall
from active_memory.agents.tools import Toolbox, ToolOutcome

HUGE_LINE = 16 * 1024 * 1024
FAKE_KEY = [
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    *(f"FAKEKEYMATERIAL{n:02d}notarealkeyFAKEKEYMATERIAL" for n in range(8)),
    "-----END OPENSSH PRIVATE KEY-----",
]


async def _read(
    tools: Toolbox, path: str, offset: int | None = None, limit: int | None = None
) -> ToolOutcome:
    arguments = {"root": "checkout", "path": path, "offset": offset, "limit": limit}
    return await tools.run(ToolCall("c1", "read_file", json.dumps(arguments)))


async def test_a_huge_single_line_is_cut_and_never_held_whole(tmp_path: Path) -> None:
    with (tmp_path / "bundle.min.js").open("w") as handle:
        handle.write("x" * HUGE_LINE + "\nsecond line\n")
    (tmp_path / "small.txt").write_text("one line\n")
    tools = Toolbox({"checkout": tmp_path}, max_output_bytes=1000)
    # A first read loads what the tool imports on use; run alone, that was 4 MB of the peak.
    await _read(tools, "small.txt")

    tracemalloc.start()
    try:
        outcome = await _read(tools, "bundle.min.js")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < HUGE_LINE // 8
    header, body = outcome.content.split("\n", 1)
    assert header == "checkout:bundle.min.js lines 1-1; more follows, continue with offset=2"
    assert body == "x" * 1000 + f" [line 1 cut: 1000 of {HUGE_LINE} bytes shown]\n"
    after = await _read(tools, "bundle.min.js", offset=2)
    assert after.content == "checkout:bundle.min.js lines 2-2; end of file\nsecond line\n"


async def test_a_cut_never_splits_a_character(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("é" * 5000 + "\n")
    outcome = await _read(Toolbox({"checkout": tmp_path}, max_output_bytes=1001), "long.txt")
    body = outcome.content.split("\n", 1)[1]
    assert body == "é" * 500 + " [line 1 cut: 1001 of 10000 bytes shown]\n"


async def test_a_window_stops_before_a_line_that_would_pass_the_byte_budget(
    tmp_path: Path,
) -> None:
    (tmp_path / "mixed.txt").write_text("short\n" + "y" * 200 + "\nlast\n")
    tools = Toolbox({"checkout": tmp_path}, max_output_bytes=100)

    first = await _read(tools, "mixed.txt")
    second = await _read(tools, "mixed.txt", offset=2)

    assert (
        first.content
        == "checkout:mixed.txt lines 1-1; more follows, continue with offset=2\nshort\n"
    )
    assert second.content.startswith("checkout:mixed.txt lines 2-2; more follows")
    assert second.content.endswith(" [line 2 cut: 100 of 200 bytes shown]\n")


async def test_windows_line_endings_and_short_files(tmp_path: Path) -> None:
    (tmp_path / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    tools = Toolbox({"checkout": tmp_path})

    assert (await _read(tools, "dos.txt")).content == (
        "checkout:dos.txt lines 1-2; end of file\none\ntwo\n"
    )
    assert (await _read(tools, "dos.txt", offset=5)).content == (
        "checkout:dos.txt: no lines from line 5 (the file has 2 lines)"
    )
    assert (await _read(tools, "empty.txt")).content == (
        "checkout:empty.txt: no lines from line 1 (the file has 0 lines)"
    )


async def test_a_window_inside_a_private_key_shows_no_key_material(tmp_path: Path) -> None:
    (tmp_path / "id_fake").write_text("\n".join(["# deploy key", *FAKE_KEY, "# end"]) + "\n")
    tools = Toolbox({"checkout": tmp_path})

    middle = await _read(tools, "id_fake", offset=4, limit=3)
    whole = await _read(tools, "id_fake")

    assert middle.content == (
        "checkout:id_fake lines 4-6; more follows, continue with offset=7\n[redacted:private-key]\n"
    )
    assert whole.content == (
        "checkout:id_fake lines 1-12; end of file\n# deploy key\n[redacted:private-key]\n# end\n"
    )


async def test_a_credential_split_by_a_cut_is_still_redacted(tmp_path: Path) -> None:
    token = "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake0000"
    (tmp_path / "remote.cfg").write_text(f"url = https://user:{token}@github.com/org/repo.git\n")
    outcome = await _read(Toolbox({"checkout": tmp_path}, max_output_bytes=30), "remote.cfg")
    body = outcome.content.split("\n", 1)[1]
    assert body == "url = https://[redacted:url-cr [line 1 cut: 30 of 83 bytes shown]\n"
