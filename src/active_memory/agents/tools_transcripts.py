"""``read_transcript``: the records an excerpt left out, read back from the complete copies.

The evidence builder writes a complete, redacted copy of every transcript whose excerpt the
budget cut (:mod:`active_memory.evidence.complete_copies`). This tool reads one of them by
execution ref and record number, a bounded page at a time: at most ``max_records`` records and
about ``max_bytes`` bytes; a record longer than the page continues at ``text_offset``. Only files
the index names, inside the evidence root's ``transcripts`` folder, are ever opened.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.agents.tools_files import Refused
from active_memory.errors import EvidenceError, InputRefused
from active_memory.evidence.complete_copies import COPY_FOLDER, load_index
from active_memory.evidence.pager import PageLimits, iter_pages

__all__ = ["MAX_RECORDS", "TranscriptRequest", "read_transcript"]

MAX_RECORDS = 200
DEFAULT_RECORDS = 50
_COPY_NAME = re.compile(r"^[0-9]{1,9}\.jsonl$")
# A copy's record holds at most 1 MiB of text; JSON escaping can make its line longer.
_READ_LIMITS = PageLimits(max_records=256, max_bytes=1024 * 1024, max_line_bytes=8 * 1024 * 1024)
_REFS_LISTED = 20


@dataclass(frozen=True, slots=True)
class TranscriptRequest:
    """One call's arguments, checked: the execution's ref, the first record, how many, and
    where in the first record's text to start."""

    ref: str
    from_record: int
    max_records: int
    text_offset: int

    @classmethod
    def parse(cls, arguments: dict[str, Any]) -> TranscriptRequest:
        execution = arguments["execution"].strip()
        if not execution:
            raise Refused("execution is empty; give an execution's ref, such as 'exec:ex-1'")
        ref = execution if execution.startswith("exec:") else f"exec:{execution}"
        start = 1 if arguments["from_record"] is None else arguments["from_record"]
        count = DEFAULT_RECORDS if arguments["max_records"] is None else arguments["max_records"]
        offset = 0 if arguments["text_offset"] is None else arguments["text_offset"]
        if start < 1:
            raise Refused(f"from_record {start!r} must be 1 or more (records count from 1)")
        if not 1 <= count <= MAX_RECORDS:
            raise Refused(f"max_records {count!r} must be between 1 and {MAX_RECORDS}")
        if offset < 0:
            raise Refused(f"text_offset {offset!r} must be 0 or more")
        return cls(ref, start, count, offset)


def _copy_path(root: Path, request: TranscriptRequest) -> Path:
    try:
        index = load_index(root)
    except EvidenceError as error:
        raise Refused(str(error)) from None
    name = index.get(request.ref)
    if name is None:
        known = sorted(index)
        listed = ", ".join(known[:_REFS_LISTED]) or "none"
        more = f" and {len(known) - _REFS_LISTED} more" if len(known) > _REFS_LISTED else ""
        raise Refused(
            f"no complete transcript of {request.ref!r}: copies exist for the executions whose "
            f"records the evidence does not show whole (an excerpt with records_dropped, or "
            f"none at all), up to the copy cap (transcripts_not_copied); copies: {listed}{more}"
        )
    folder = (root / COPY_FOLDER).resolve()
    path = (folder / name).resolve()
    if not _COPY_NAME.match(name) or path.parent != folder or not folder.is_relative_to(root):
        raise Refused(f"the transcript index names {name!r}, which is not a copy this tool reads")
    return path


def read_transcript(root: Path, arguments: dict[str, Any], max_bytes: int) -> str:
    """One page of the complete copy of an execution's transcript, as JSON lines."""
    request = TranscriptRequest.parse(arguments)
    path = _copy_path(root, request)
    shown: list[str] = []
    used = 0
    next_record: int | None = None
    continued = ""
    try:
        for page in iter_pages(path, _READ_LIMITS):
            for line in page.lines:
                record = json.loads(line.text)
                number = record.get("n")
                if not isinstance(number, int) or number < request.from_record:
                    continue
                if len(shown) >= request.max_records or (shown and used >= max_bytes):
                    next_record = number
                    break
                text = record.get("text", "")
                if not shown and request.text_offset:
                    record["text"] = text = text[request.text_offset :]
                    record["text_offset"] = request.text_offset
                encoded = json.dumps(record, ensure_ascii=False, sort_keys=True)
                if len(encoded.encode("utf-8")) > max_bytes - used:
                    if shown:
                        next_record = number
                        break
                    # One record longer than a page: its text continues in the next call.
                    keep = max(1, len(text) * (max_bytes - 256) // len(encoded.encode("utf-8")))
                    record["text"] = text[:keep]
                    encoded = json.dumps(record, ensure_ascii=False, sort_keys=True)
                    continued = (
                        f"[record {number} continues: from_record={number}, "
                        f"text_offset={request.text_offset + keep}]"
                    )
                    shown.append(encoded)
                    break
                shown.append(encoded)
                used += len(encoded.encode("utf-8")) + 1
            if next_record is not None or continued:
                break
    except (OSError, InputRefused, ValueError) as error:
        raise Refused(f"cannot read the transcript copy of {request.ref!r}: {error}") from None
    header = f"{request.ref}: complete transcript (evidence:{COPY_FOLDER}/{path.name})"
    if not shown:
        return f"{header}\n(no records from record {request.from_record} on)"
    if continued:
        footer = continued
    elif next_record is not None:
        footer = f"[more records: from_record={next_record}]"
    else:
        footer = "[end of transcript]"
    return "\n".join([header, *shown, footer])
