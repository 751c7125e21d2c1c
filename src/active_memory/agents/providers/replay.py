"""Recorded provider exchanges: replay them offline, or record them from a real provider.

A recording is a JSONL file, one line per model turn::

    {"specialist": …, "batch": …, "turn": …, "request_digest": …, "request": {projection},
     "response": {…}, "prompt_sha256": …, "contract_sha256": …, "model": …, "lane": …,
     "parts": {part: sha256}, "system": …, "evidence": … (a session's first turn only)}

Replay matches a request by its labels (specialist, batch, turn), which sessions set, so
specialists running in parallel replay in any order. It fails loudly with
:class:`ReplayMismatch` on a call nobody recorded, on a recorded exchange asked for twice, on a
request whose digest differs (``strict=True``: :class:`ReplayChanged` names what changed and
the first differing part, see :mod:`.replay_compare`), and on exchanges left unconsumed at
:meth:`ReplayProvider.assert_consumed`. Recordings hold only the toolkit's own types, with
credential formats scrubbed, never SDK objects or HTTP headers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from active_memory.agents.providers.base import ModelProvider, ModelRequest, ModelResponse
from active_memory.agents.providers.codec import (
    request_projection,
    request_to_dict,
    response_from_dict,
    response_to_dict,
)
from active_memory.agents.providers.replay_compare import compare, request_parts
from active_memory.agents.providers.script_check import ChecksConsumption
from active_memory.errors import ReplayChanged, ReplayMismatch
from active_memory.evidence.redact import RedactionMemo
from active_memory.models.runs import canonical_json
from active_memory.private_files import write_private_text
from active_memory.screening.redaction_marks import redaction_mark
from active_memory.screening.secrets import redact_credentials

__all__ = ["CHECKOUT", "RecordingProvider", "ReplayProvider", "relocate", "scrub"]

REDACTED = "[REDACTED]"
# The stable name of the run's checkout folder inside recorded requests.
CHECKOUT = "$CHECKOUT"

Key = tuple[str, int, int]


def _marker(kind: str) -> str:
    return REDACTED


def _answer_marker(kind: str) -> str:
    # An answer keeps the credential's kind: admission refuses the mark as that credential, so
    # the replayed answer is judged as the live one was (a bare marker would pass).
    return redaction_mark(kind)


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (JSON data) with ``change`` applied to every string in it; keys are kept."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    return value


# Every turn of a session repeats the system prompt, the evidence and the earlier messages, and
# redacting each again was most of a replayed command's scrubbing (421 calls for one eval run):
# each of this module's markers has a memo (a few MiB at most), keyed by digest so a text that
# held a credential is remembered without the secret; another marker has none.
_MEMOS: dict[Callable[[str], str], RedactionMemo] = {
    _marker: RedactionMemo(4 * 1024 * 1024, _marker, by_digest=True),
    _answer_marker: RedactionMemo(1024 * 1024, _answer_marker, by_digest=True),
}


def _redacted(text: str, marker: Callable[[str], str]) -> str:
    """``redact_credentials(text, marker)``'s text, from the marker's memo when it has one."""
    memo = _MEMOS.get(marker)
    return redact_credentials(text, marker)[0] if memo is None else memo.redact(text)


def scrub(value: Any, secrets: Iterable[str] = (), marker: Callable[[str], str] = _marker) -> Any:
    """``value`` with the given secret values and every credential format admission knows
    (:mod:`active_memory.screening.secrets`) replaced by ``marker(kind)`` (the given values'
    kind: ``api_key``)."""
    known = [s for s in secrets if len(s) >= 8]

    def scrubbed(text: str) -> str:
        # Formats first, so a given value that has a known format keeps its kind in the mark.
        redacted = _redacted(text, marker)
        for secret in known:
            redacted = redacted.replace(secret, marker("api_key"))
        return redacted

    return _map_strings(value, scrubbed)


def _key(request: ModelRequest) -> Key:
    labels = request.labels
    return (labels.specialist, labels.batch, labels.turn)


def _describe(key: Key) -> str:
    specialist, batch, turn = key
    return f"specialist {specialist!r} batch {batch} turn {turn}"


def relocate(value: Any, locations: Mapping[str, str]) -> Any:
    """``value`` with each local path in ``locations`` replaced by its stable name, so a run
    unpacked elsewhere (another temporary folder) still matches its recording."""
    if not locations:
        return value

    def relocated(text: str) -> str:
        for path, name in locations.items():
            text = text.replace(path, name)
        return text

    return _map_strings(value, relocated)


def _scrubbed(
    request: ModelRequest, secrets: Iterable[str] = (), locations: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The request as a recording would hold it: scrubbed and relocated first."""
    data: dict[str, Any] = relocate(scrub(request_to_dict(request), secrets), locations or {})
    return data


def _digest(data: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


class ReplayProvider(ChecksConsumption):
    """Answers from a recording; ``strict`` also requires each request's digest to match."""

    def __init__(
        self,
        path: str | Path,
        *,
        strict: bool = False,
        locations: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.strict = strict
        self.locations = dict(locations or {})
        # What differed in a lenient replay, one sentence per exchange, for a caller's warning.
        self.changed: list[str] = []
        self._exchanges: dict[Key, dict[str, Any]] = {}
        self._consumed: set[Key] = set()
        # The lane the recording was made on, so recording a replay keeps it; and the model, so
        # a caller can replay a recording made with another model than the inherited one.
        self.lane: str | None = None
        self.model: str | None = None
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise ReplayMismatch(f"cannot read recording {str(self.path)!r}: {e.strerror}") from e
        for number, line in enumerate(lines, start=1):
            if line.strip():
                self._load(number, line)

    def _load(self, number: int, line: str) -> None:
        where = f"{self.path}:{number}"
        try:
            record = json.loads(line)
            key: Key = (str(record["specialist"]), int(record["batch"]), int(record["turn"]))
            response_from_dict(record["response"])
            str(record["request_digest"])
        except (ValueError, KeyError, TypeError) as e:
            raise ReplayMismatch(f"{where}: not a recorded exchange ({e!r})") from e
        if key in self._exchanges:
            raise ReplayMismatch(f"{where}: {_describe(key)} is recorded twice")
        self._exchanges[key] = record
        if self.lane is None and isinstance(record.get("lane"), str):
            self.lane = record["lane"]
        if self.model is None and isinstance(record.get("model"), str):
            self.model = record["model"]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        key = _key(request)
        record = self._exchanges.get(key)
        if record is None:
            raise ReplayMismatch(
                f"unexpected call: {_describe(key)} is not in the recording {str(self.path)!r}"
            )
        if key in self._consumed:
            raise ReplayMismatch(f"unexpected call: {_describe(key)} was already replayed once")
        current = _scrubbed(request, locations=self.locations)
        if record["request_digest"] != _digest(current):
            error = self._changed(key, record, request, current)
            if self.strict:
                raise error
            self.changed.append(str(error))
        self._consumed.add(key)
        return response_from_dict(record["response"])

    def _changed(
        self, key: Key, record: Mapping[str, Any], request: ModelRequest, current: dict[str, Any]
    ) -> ReplayChanged:
        first = self._exchanges.get((key[0], key[1], 1), {})
        recorded_system = first.get("system")
        recorded_evidence = first.get("evidence")
        found = compare(
            record,
            request,
            current,
            projection=relocate(scrub(request_projection(request)), self.locations),
            recorded_system=recorded_system if isinstance(recorded_system, str) else None,
            recorded_evidence=recorded_evidence if isinstance(recorded_evidence, str) else None,
        )
        what = " and ".join(found.changed) if found.changed else "the request"
        where = f"; first differing part {found.part}" if found.part else ""
        detail = f": {found.detail}" if found.detail else ""
        return ReplayChanged(
            f"the request for {_describe(key)} differs from the recording "
            f"{str(self.path)!r}: {what} changed{where}{detail}",
            changed=found.changed,
            part=found.part,
        )

    def leftovers(self) -> tuple[Key, ...]:
        return tuple(sorted(set(self._exchanges) - self._consumed))

    def assert_consumed(self) -> None:
        """Fail when recorded exchanges were never asked for (a session made fewer calls)."""
        left = self.leftovers()
        if left:
            listed = "; ".join(_describe(key) for key in left)
            raise ReplayMismatch(
                f"{len(left)} recorded exchange(s) in {str(self.path)!r} were never requested: "
                f"{listed}"
            )


class RecordingProvider:
    """Forwards to a real provider and writes each exchange to a recording on :meth:`save`.

    The file is written whole and atomically, sorted by specialist, batch and turn, so the same
    exchanges always give the same bytes. ``secrets`` are extra exact values to scrub (e.g. the
    key in use); key-like strings are scrubbed regardless.
    """

    def __init__(
        self,
        inner: ModelProvider,
        path: str | Path,
        *,
        secrets: Iterable[str] = (),
        lane: str | None = None,
        locations: Mapping[str, str] | None = None,
    ) -> None:
        self.inner = inner
        self.path = Path(path)
        self.lane = lane if lane is not None else getattr(inner, "lane", None)
        self._secrets = tuple(secrets)
        self._locations = dict(locations or {})
        self._records: dict[Key, dict[str, Any]] = {}

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.complete(request)
        key = _key(request)
        if key in self._records:
            raise ReplayMismatch(f"cannot record {_describe(key)} twice; labels must be unique")
        data = _scrubbed(request, self._secrets, self._locations)
        entry: dict[str, Any] = {
            "specialist": key[0],
            "batch": key[1],
            "turn": key[2],
            "request_digest": _digest(data),
            "request": relocate(scrub(request_projection(request), self._secrets), self._locations),
            "response": scrub(response_to_dict(response), self._secrets, _answer_marker),
            "prompt_sha256": request.labels.prompt_sha256 or None,
            "contract_sha256": request.labels.contract_sha256 or None,
            "model": request.model,
            "lane": self.lane,
            "parts": request_parts(data),
        }
        if key[2] == 1:
            # Kept once per session, so a replay can show the first line a prompt edit (or new
            # evidence, the session's first message) changed.
            entry["system"] = data["system"]
            first = data["messages"][0] if data["messages"] else {}
            if isinstance(first.get("text"), str):
                entry["evidence"] = first["text"]
        self._records[key] = entry
        return response

    @property
    def exchanges(self) -> int:
        """How many exchanges are recorded so far."""
        return len(self._records)

    def save(self) -> Path:
        lines = [
            json.dumps(self._records[key], ensure_ascii=False, sort_keys=True)
            for key in sorted(self._records)
        ]
        # A recording holds run evidence (scrubbed of credentials, still the user's own).
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_private_text(self.path, "".join(line + "\n" for line in lines))
        return self.path

    async def aclose(self) -> None:
        self.save()
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()
