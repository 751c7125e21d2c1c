"""The shell every session converter shares: read a file line by line, then assemble the record.

A source subclasses :class:`SessionConverter` and says what one parsed line means
(:meth:`~SessionConverter.entry`). The rest is the same for every harness: the lanes, receipts
and cuts of :mod:`.lanes`; a line that is not a JSON object, or that is nested too deeply to
convert, counted as unreadable and recorded as a ``lines`` cut (the conversion goes on); and the
end, where a session whose main conversation recorded nothing is refused and any other becomes a
record through :func:`~.assemble.assemble_record`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from active_memory.errors import RunRecordError
from active_memory.evidence.sources.assemble import SessionFacts, assemble_record
from active_memory.evidence.sources.lanes import Lane, ReceiptRing, SessionWriter, SourceCuts
from active_memory.evidence.sources.lines import SourceLine, iter_lines
from active_memory.models.runs import RunRecord, canonical_json

if TYPE_CHECKING:
    from active_memory.harnesses import HarnessRow

__all__ = ["SessionConverter", "block_marker", "content_blocks", "content_text"]


# A session's names, ids, paths and versions are kept to this many characters.
def content_blocks(content: Any) -> list[Any]:
    """A message's content as a list of blocks: anything but a list is one text block."""
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def block_marker(block: dict[str, Any]) -> str:
    """What a block that leaves no text of its own (an image, a tool call) leaves in a
    transcript: ``[its type]``, so a reader still sees that something stood there."""
    return f"[{str(block.get('type') or 'block')[:64]}]"


def content_text(content: Any, block_text: Callable[[Any], str | None]) -> str:
    """A message's content as text: a string as it is, a list of blocks one per line
    (``block_text`` says what a block leaves, None to leave it out), anything else as JSON."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else canonical_json(content)
    parts = (block_text(block) for block in content)
    return "\n".join(part for part in parts if part is not None)


class SessionConverter:
    """One session being converted into the record folder ``workdir`` for harness ``row``."""

    def __init__(self, row: HarnessRow, workdir: Path) -> None:
        self.row = row
        self.workdir = workdir
        self.writer = SessionWriter(workdir)
        self.receipts = ReceiptRing()
        self.cuts = SourceCuts()
        self.facts = SessionFacts.of(row)

    @property
    def main(self) -> Lane:
        """The main conversation's lane."""
        return self.writer.lane("main", self.facts.session_id or self.row.name)

    def entry(self, value: dict[str, Any], *, first: bool) -> None:
        """Convert one parsed line; ``first`` is true for the file's first line."""
        raise NotImplementedError

    def read(self, path: Path) -> None:
        """Every line of ``path`` through :meth:`entry`, in file order; a line that cannot be
        parsed, or is nested too deeply to convert, goes to :meth:`unreadable` instead."""
        for index, line in enumerate(iter_lines(path)):
            if line.value is None:
                self.unreadable(line)
                continue
            try:
                self.entry(line.value, first=index == 0)
            except RecursionError:
                self.unreadable(SourceLine(line.number, line.size, None, "nested too deeply", ""))

    def unreadable(self, line: SourceLine) -> None:
        """Count a line that was not converted and record it as a ``lines`` cut."""
        self.facts.lines_unreadable += 1
        self.cuts.add("lines", f"line not read: {line.problem}", size=line.size)

    def read_session(self, path: Path) -> None:
        """:meth:`read` the whole session file, then close every transcript file."""
        try:
            self.read(path)
        finally:
            self.writer.close()

    def record(self, source: Path, *, session_id: str, empty: str) -> RunRecord:
        """The record of a session read whole: RunRecordError ``empty`` (naming ``source``) when
        its main conversation recorded nothing; ``session_id`` when the session named no id."""
        main = self.writer.lanes.get("main")
        if main is None or main.records == 0:
            raise RunRecordError("$", empty, source=str(source))
        self.facts.session_id = self.facts.session_id or session_id
        main.conversation = self.facts.session_id
        return self.assemble(source)

    def assemble(self, source: Path) -> RunRecord:
        """Write the record folder and load it back (see :func:`.assemble.assemble_record`)."""
        return assemble_record(
            self.facts, self.writer, self.receipts, self.cuts, self.workdir, source
        )
