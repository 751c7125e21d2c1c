"""A run's one exposure ledger, shared by its broker and the helper's store fallback.

A helper installed with ``--store`` answers from the store itself when the run's broker does not
answer within its share of the call (a host whose event loop is busy). Without a ledger in
common, that card would be missing from the run's deliveries and receipts, and the broker would
deliver it again on the conversation's next call. So a run keeps a private folder of its own
(mode 0700, beside its tickets) and names it to the helper (``ACTIVE_MEMORY_LEDGER``):

* ``<digest>.keys``: one file per conversation, the ``id@revision`` keys handed over, read by
  both answerers before they offer a card and appended by both once it was handed over
  (:class:`~active_memory.hooks.exposure_files.ExposureFiles` in folder mode);
* ``fallback.jsonl``: one line per call the fallback answered (:func:`write_fallback_entry`),
  with the helper's call id, the conversation, node and execution, the tool, its root-relative
  paths and the keys it handed over. The run reads the lines it has not read yet
  (:meth:`RunLedger.sync`, before each broker answer and whenever its manifest is read): each is
  a tool receipt (the same receipt as the broker's when the broker saw that call id too) and
  its deliveries, recorded once, naming that receipt.

The writer runs in the hook fallback, once per tool call: standard library only, the line
encoded with the C string encoder rather than the ``json`` package, one ``write`` on an
``O_APPEND`` descriptor so concurrent helpers never interleave a line, and a line that follows a
torn one starts a line of its own. The reader runs in the host; it reads at most
:data:`MAX_JOURNAL_BYTES` and skips any line that is not a well-formed entry (a torn write, or
anything else), so the folder's content can never fail the run.
"""

from __future__ import annotations

import os
import time
from _thread import allocate_lock

from active_memory.hooks.exposure_files import ExposureFiles, is_exposure_key
from active_memory.hooks.private_dir import append_private, is_private, is_private_dir
from active_memory.recall.exchange import id_field
from active_memory.type_checking import TYPE_CHECKING

try:
    from _json import encode_basestring as _json_string
except ImportError:  # an interpreter without CPython's accelerator
    from json.encoder import py_encode_basestring as _json_string

if TYPE_CHECKING:
    from collections.abc import Sequence

    from active_memory.recall.recall_session import RecallSession

__all__ = [
    "ENV_LEDGER",
    "JOURNAL_NAME",
    "MAX_JOURNAL_BYTES",
    "RunLedger",
    "ledger_folder",
    "write_fallback_entry",
]

ENV_LEDGER = "ACTIVE_MEMORY_LEDGER"
JOURNAL_NAME = "fallback.jsonl"
MAX_JOURNAL_BYTES = 8 * 1024 * 1024
_MAX_LINE_BYTES = 16 * 1024
_MAX_PATHS = 8
_MAX_KEYS = 64
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def ledger_folder() -> str | None:
    """The run's ledger folder the environment names, when it is a private folder of ours."""
    folder = os.environ.get(ENV_LEDGER)
    return folder if folder and is_private_dir(folder) else None


def _list(values: Sequence[str]) -> str:
    return "[" + ",".join(_json_string(value) for value in values) + "]"


def _optional(value: str | None) -> str:
    return "null" if value is None else _json_string(value)


def write_fallback_entry(
    folder: str,
    *,
    call_id: str | None,
    conversation: str,
    tracked: bool,
    node: str | None,
    execution: str | None,
    tool: str,
    paths: Sequence[str],
    keys: Sequence[str],
    time_ms: int | None = None,
) -> bool:
    """Append one answered call to the run's journal; False when nothing was written."""
    now = int(time.time() * 1000) if time_ms is None else time_ms
    line = (
        f'{{"call":{_optional(call_id)},"conversation":{_json_string(conversation)},'
        f'"tracked":{"true" if tracked else "false"},"node":{_optional(node)},'
        f'"execution":{_optional(execution)},"tool":{_json_string(tool[:128])},'
        f'"paths":{_list(paths[:_MAX_PATHS])},"keys":{_list(keys[:_MAX_KEYS])},'
        f'"time_ms":{now}}}\n'
    ).encode("utf-8", "surrogatepass")
    if len(line) > _MAX_LINE_BYTES or not is_private_dir(folder):
        return False
    return append_private(os.path.join(folder, JOURNAL_NAME), line, MAX_JOURNAL_BYTES)


def _entry(line: bytes) -> dict[str, object] | None:
    """One journal line, checked field by field; None for anything else."""
    import json  # the host side only: the fallback writes without it

    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict):
        return None
    texts = ("conversation", "tool")
    optional = ("call", "node", "execution")
    if not all(isinstance(entry.get(name), str) and entry[name] for name in texts):
        return None
    if not all(entry.get(name) is None or id_field(entry[name]) for name in optional):
        return None
    paths, keys = entry.get("paths"), entry.get("keys")
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        return None
    if not isinstance(keys, list) or not all(isinstance(k, str) and is_exposure_key(k)
                                             for k in keys):  # fmt: skip
        return None
    stamp = entry.get("time_ms")
    if not isinstance(stamp, int) or isinstance(stamp, bool) or stamp < 0:
        return None
    if not isinstance(entry.get("tracked"), bool) or id_field(entry["conversation"]) is None:
        return None
    return entry


class RunLedger:
    """A run's ledger folder: the exposure files its broker's ledger keeps, and the reader of
    the fallback's journal that makes each answered call a receipt and deliveries of the run."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = os.fspath(folder)
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        os.chmod(self.folder, 0o700)  # makedirs honours the umask
        self.files = ExposureFiles.in_folder(self.folder)
        self._offset = 0
        self._lock = allocate_lock()

    def __repr__(self) -> str:
        return f"RunLedger({self.folder!r})"

    def sync(self, session: RecallSession, *, default_node: str = "unknown") -> int:
        """Import the journal lines written since the last call; how many calls were imported."""
        # Imported here, in the host: the hook calls that write the journal load no exception tree.
        from active_memory.errors import ActiveMemoryError

        with self._lock:
            lines = self._new_lines()
            imported = 0
            for line in lines:
                entry = _entry(line)
                if entry is None:
                    continue
                try:
                    self._import(session, entry, default_node)
                except (ValueError, ActiveMemoryError):
                    continue  # a field the run record refuses (a path too long…): not this run's
                imported += 1
            return imported

    def _new_lines(self) -> list[bytes]:
        path = os.path.join(self.folder, JOURNAL_NAME)
        try:
            descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except OSError:
            return []
        try:
            info = os.fstat(descriptor)
            if not is_private(info) or info.st_size <= self._offset:
                return []
            os.lseek(descriptor, self._offset, os.SEEK_SET)
            data = os.read(descriptor, min(info.st_size, MAX_JOURNAL_BYTES) - self._offset)
        except OSError:
            return []
        finally:
            os.close(descriptor)
        complete = data.rfind(b"\n") + 1  # a line still being written is read next time
        self._offset += complete
        return data[:complete].splitlines()

    @staticmethod
    def _import(session: RecallSession, entry: dict[str, object], default_node: str) -> None:
        call, execution = entry.get("call"), entry.get("execution")
        node = entry.get("node")
        paths = tuple(str(path) for path in entry["paths"])  # type: ignore[attr-defined]
        stamp = int(entry["time_ms"])  # type: ignore[call-overload]
        receipt = session.receipts.add(
            str(entry["tool"]),
            paths,
            execution if isinstance(execution, str) else None,
            call_id=call if isinstance(call, str) else None,
            time_ms=stamp,
        )
        session.ledger.import_delivery(
            str(entry["conversation"]),
            [str(key) for key in entry["keys"]],  # type: ignore[attr-defined]
            node_id=node if isinstance(node, str) else default_node,
            execution=execution if isinstance(execution, str) else None,
            receipt_seq=receipt.seq,
            time_ms=stamp,
            tracked=bool(entry["tracked"]),
        )
