"""Complete transcript copies: what the budget left out stays readable in the private folder.

For every execution whose excerpt the budget cut (records reclaimed, or records cut with a
marker), the builder writes the whole transcript, redacted and with workspace-relative paths,
to ``transcripts/<n>.jsonl`` in the specialist's private folder (0700; files 0600), and lists it
in ``transcripts/index.json`` (``{"exec:<id>": "<n>.jsonl"}``): execution ids are free text, the
file names are not. Each line is one record::

    {"n": 12, "role": "assistant", "tool": "Bash", "receipt": "receipt:7", "text": "…",
     "bytes": 812}

``n`` is the record's line number in the transcript (the ``n`` an excerpt shows), ``bytes`` its
size in the transcript. A record longer than :data:`COPY_RECORD_BYTES` keeps its first part and
says how much went (``cut_bytes``): the copy is read through a bounded tool, and a tool output of
several megabytes tells a specialist nothing a prefix does not. The specialist reads the copies
with the ``read_transcript`` tool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from active_memory.errors import EvidenceError, InputRefused
from active_memory.evidence.budget import redact_and_cut
from active_memory.evidence.history import project_record
from active_memory.evidence.pager import Cancellation, PageLimits, iter_pages
from active_memory.evidence.private import write_private_file
from active_memory.evidence.receipt_labels import ReceiptLabels
from active_memory.evidence.redact import redact_text
from active_memory.models.runs import Execution, ToolReceipt
from active_memory.private_files import make_private_dir, write_private_lines

__all__ = [
    "COPY_FOLDER",
    "COPY_INDEX",
    "COPY_RECORD_BYTES",
    "COPY_TOTAL_BYTES",
    "CompleteCopy",
    "CopyWriter",
    "copy_cut_transcripts",
    "copy_left_out",
    "load_index",
]

COPY_FOLDER = "transcripts"
COPY_INDEX = "index.json"
COPY_RECORD_BYTES = 1024 * 1024
# Transcript bytes one build copies at most. Redaction reads about a megabyte a second and the
# build runs inside the specialist's share of the deadline: a gigabyte session copied whole
# would hold it for a quarter of an hour. 16 MiB covers a long session (the corpus's longest
# are a few MiB); past it the payload counts what was not copied (``transcripts_not_copied``).
COPY_TOTAL_BYTES = 16 * 1024 * 1024
# Pages of at most 1 MiB kept; a record's prefix is read whole so it can be redacted whole.
_COPY_LIMITS = PageLimits(max_records=256, max_bytes=1024 * 1024, max_line_bytes=COPY_RECORD_BYTES)


@dataclass(frozen=True, slots=True)
class CompleteCopy:
    """One written copy: its file (relative to the private folder) and what the excerpt left
    out of it: records not shown at all and their bytes in the transcript."""

    file: str
    records: int
    records_left_out: int
    bytes_left_out: int


class CopyWriter:
    """Writes complete copies into ``folder/transcripts``; :meth:`finish` writes their index."""

    def __init__(
        self,
        folder: Path,
        executions: Iterable[Execution],
        receipts: Iterable[ToolReceipt],
        rewrite: Callable[[str], str],
        cancel: Cancellation | None = None,
        total_bytes: int | None = None,
    ) -> None:
        self._folder = folder
        self._room = COPY_TOTAL_BYTES if total_bytes is None else total_bytes
        self.not_copied: dict[str, int] = {}  # ref -> transcript bytes, over ``total_bytes``
        self._by_ref = {execution.ref: execution for execution in executions}
        # By execution once: scanning every receipt for every copy made large runs quadratic.
        self._receipts: dict[str | None, list[ToolReceipt]] = {}
        for receipt in receipts:
            self._receipts.setdefault(receipt.execution, []).append(receipt)
        self._rewrite = rewrite
        self._cancel = cancel
        self._index: dict[str, str] = {}
        self.copies: dict[str, CompleteCopy] = {}

    def write(self, ref: str, shown: Iterable[int]) -> CompleteCopy | None:
        """The copy of execution ``ref``'s transcript (written once), counting as left out
        every record whose number is not in ``shown``; None when it has no readable one."""
        if ref in self.copies:
            return self.copies[ref]
        execution = self._by_ref.get(ref)
        if execution is None or execution.transcript is None:
            return None
        try:
            size = os.stat(execution.transcript).st_size
        except OSError:
            return None  # the excerpt already says when the transcript is unavailable
        if size > self._room:
            self.not_copied[ref] = size
            return None
        self._room -= size
        target = self._folder / COPY_FOLDER
        name = f"{len(self._index) + 1}.jsonl"
        tally = _Tally(frozenset(shown))
        try:
            make_private_dir(target)
            write_private_lines(target / name, self._lines(execution, tally))
        except (OSError, InputRefused):
            return None  # the excerpt already says when the transcript is unavailable
        self._index[ref] = name
        copy = CompleteCopy(f"{COPY_FOLDER}/{name}", tally.records, tally.left, tally.left_bytes)
        self.copies[ref] = copy
        return copy

    def not_copied_note(self) -> dict[str, int] | None:
        """What the copy cap kept out, for the payload: executions and their transcript bytes."""
        if not self.not_copied:
            return None
        return {"executions": len(self.not_copied), "bytes": sum(self.not_copied.values())}

    def finish(self) -> None:
        """Write the index of the copies written (once: a run of 100,000 cut executions must
        not rewrite a growing index 100,000 times)."""
        if self._index:
            index = json.dumps(self._index, indent=1, sort_keys=True) + "\n"
            write_private_file(self._folder / COPY_FOLDER, COPY_INDEX, index)
        else:
            # A folder reused from an earlier build must not offer that build's copies.
            (self._folder / COPY_FOLDER / COPY_INDEX).unlink(missing_ok=True)

    def _lines(self, execution: Execution, tally: _Tally) -> Iterator[str]:
        assert execution.transcript is not None
        labels = ReceiptLabels(self._receipts.get(execution.id, ()))
        for page in iter_pages(execution.transcript, _COPY_LIMITS, self._cancel):
            for line in page.lines:
                found = project_record(line)
                # Redacted around what is kept only: a tool output of megabytes costs its first MiB.
                text, cut = redact_and_cut(self._rewrite(found.text), COPY_RECORD_BYTES)
                entry: dict[str, object] = {"n": line.number}
                if found.role:
                    entry["role"] = found.role
                if found.tool:
                    entry["tool"] = redact_text(found.tool)
                receipt = labels.label(
                    execution.id,
                    role=found.role,
                    tool=found.tool,
                    time_ms=found.time_ms,
                    seq=found.receipt,
                )
                if receipt:
                    entry["receipt"] = receipt
                entry["text"] = text
                entry["bytes"] = line.size
                if line.cut or cut:
                    entry["cut_bytes"] = max(cut, line.size - len(line.text.encode("utf-8")))
                tally.count(line.number, line.size)
                yield json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"


@dataclass(slots=True)
class _Tally:
    shown: frozenset[int]
    records: int = 0
    left: int = 0
    left_bytes: int = 0

    def count(self, number: int, size: int) -> None:
        self.records += 1
        if number not in self.shown:
            self.left += 1
            self.left_bytes += size


def copy_cut_transcripts(
    transcripts: list[dict[str, Any]], copies: CopyWriter, *, note: bool
) -> None:
    """Write the complete copy of every excerpt that lost or cut records; ``note`` puts the
    transcript bytes the excerpt left out (``bytes_left_out``) beside its ``records_dropped``:
    the ``read_transcript`` tool finds the copy by the execution's ref."""
    for item in transcripts:
        if "unavailable" in item:
            continue
        if not (item.get("records_dropped") or item.get("records_cut")):
            continue
        copy = copies.write(item["execution"], (record["n"] for record in item["records"]))
        if copy is not None and note:
            item["bytes_left_out"] = copy.bytes_left_out


def copy_left_out(
    executions: Iterable[Execution], transcripts: list[dict[str, Any]], copies: CopyWriter
) -> None:
    """Copy every execution the payload has no excerpt of: the most cut of all."""
    excerpted = {item["execution"] for item in transcripts}
    for execution in executions:
        if execution.transcript is not None and execution.ref not in excerpted:
            copies.write(execution.ref, ())


def load_index(folder: Path) -> Mapping[str, str]:
    """The index of a private folder's copies (empty when there is none); EvidenceError when
    it is not the mapping the writer makes."""
    path = folder / COPY_FOLDER / COPY_INDEX
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise EvidenceError(f"transcript index {str(path)!r} is not JSON: {exc}") from exc
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise EvidenceError(f"transcript index {str(path)!r} is not a mapping of names")
    return value
