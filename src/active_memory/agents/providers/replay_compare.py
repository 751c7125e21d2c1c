"""What differs between a recorded request and the one a replay is asked for.

A recording holds, per exchange, the sha256 of the prompt and contract versions (from the
request labels), the model, and a digest of each part of the request (``system``,
``contract``, the settings, ``tools``, ``messages[i]``), all over canonical JSON so key order
never matters. :func:`compare` turns a mismatch into the kinds of change a prompt author
thinks in (prompt, contract, model, evidence, conversation, settings) and the first differing
part, shown as it is now. Recordings made before per-part digests compare their readable
projection instead, again as canonical JSON.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from active_memory.agents.providers.base import ModelRequest
from active_memory.models.runs import canonical_json

__all__ = ["Difference", "compare", "request_parts"]

_SETTINGS = ("model", "effort", "max_tokens", "final")
_SHOWN = 160


def _sha(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def _split(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request's parts, in the order a reader meets them."""
    parts: dict[str, Any] = {"system": data["system"], "contract": data["contract"]}
    for name in _SETTINGS:
        parts[name] = data[name]
    parts["tools"] = data["tools"]
    for index, message in enumerate(data["messages"]):
        parts[f"messages[{index}]"] = message
    return parts


def request_parts(data: Mapping[str, Any]) -> dict[str, str]:
    """sha256 of each part of a (scrubbed) :func:`request_to_dict` form."""
    return {name: _sha(value) for name, value in _split(data).items()}


@dataclass(frozen=True, slots=True)
class Difference:
    changed: tuple[str, ...]
    part: str | None
    detail: str


def _clip(value: Any, width: int = _SHOWN) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _around(recorded: Any, current: Any) -> str:
    """Both values near their first differing character, so a long text shows its change."""
    old = recorded if isinstance(recorded, str) else canonical_json(recorded)
    new = current if isinstance(current, str) else canonical_json(current)
    at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), None)
    if at is None:
        at = min(len(old), len(new))
    start = max(0, at - 16)
    lead = "…" if start else ""
    return (
        f"at character {at}: recorded {lead}{_clip(old[start:], 64)!r}, "
        f"now {lead}{_clip(new[start:], 64)!r}"
    )


def _first_line_difference(recorded: str | None, current: str) -> str:
    if recorded is None:
        return f"now {_clip(current)}"
    old, new = recorded.splitlines(), current.splitlines()
    for number, (a, b) in enumerate(zip(old, new, strict=False), start=1):
        if a != b:
            return f"line {number} {_around(a, b)}"
    number = min(len(old), len(new)) + 1
    if len(new) > len(old):
        return f"line {number} on added: {_clip(chr(10).join(new[number - 1 :]), 96)!r}"
    return f"line {number} on removed: {_clip(chr(10).join(old[number - 1 :]), 96)!r}"


def _kinds(record: Mapping[str, Any], request: ModelRequest, differing: Iterable[str]) -> list[str]:
    labels = request.labels
    kinds: list[str] = []
    recorded_prompt = record.get("prompt_sha256") or ""
    recorded_contract = record.get("contract_sha256") or ""
    if recorded_prompt and labels.prompt_sha256 and recorded_prompt != labels.prompt_sha256:
        kinds.append("prompt")
    if recorded_contract and labels.contract_sha256 and recorded_contract != labels.contract_sha256:
        kinds.append("contract")
    parts = set(differing)
    if "model" in parts:
        kinds.append("model")
    # The system prompt carries the run's evidence file list and the contract's text: when the
    # prompt and contract versions are unchanged, a different system text is different evidence.
    if "messages[0]" in parts or ("system" in parts and not kinds):
        kinds.append("evidence")
    if any(p.startswith("messages[") and p != "messages[0]" for p in parts):
        kinds.append("conversation")
    if parts & {"effort", "max_tokens", "final", "tools"} or ("contract" in parts and not kinds):
        kinds.append("settings")
    return kinds


def compare(
    record: Mapping[str, Any],
    request: ModelRequest,
    current: Mapping[str, Any],
    *,
    projection: Mapping[str, Any],
    recorded_system: str | None = None,
    recorded_evidence: str | None = None,
) -> Difference:
    """How the scrubbed ``current`` :func:`request_to_dict` form differs from ``record``'s.

    ``recorded_system`` is the system prompt as recorded (a session's first turn keeps it), to
    show the first differing line of a changed prompt, and ``recorded_evidence`` the session's
    first message (the evidence) likewise; ``projection`` is the current request's
    readable projection, compared with recordings that predate per-part digests."""
    recorded_parts = record.get("parts")
    if not isinstance(recorded_parts, Mapping):
        return _compare_projection(record, projection)
    now = _split(current)
    differing = [name for name, value in now.items() if recorded_parts.get(name) != _sha(value)]
    differing += [name for name in recorded_parts if name not in now]
    kinds = _kinds(record, request, differing)
    if not differing:
        return Difference(tuple(kinds), None, "")
    part = differing[0]
    if part not in now:
        return Difference(tuple(kinds), part, f"{part} is recorded but no longer sent")
    if part == "system":
        detail = _first_line_difference(recorded_system, now["system"])
    elif part == "messages[0]" and isinstance(now[part].get("text"), str):
        detail = _first_line_difference(recorded_evidence, now[part]["text"])
    else:
        detail = f"now {_clip(now[part])}"
    return Difference(tuple(kinds), part, detail)


def _compare_projection(record: Mapping[str, Any], now: Mapping[str, Any]) -> Difference:
    recorded = record.get("request")
    if not isinstance(recorded, Mapping):
        return Difference(("evidence",), None, "the recording holds no request projection")
    for key in sorted(set(recorded) | set(now)):
        if canonical_json(recorded.get(key)) != canonical_json(now.get(key)):
            kind = "model" if key == "model" else "evidence"
            return Difference((kind,), key, _around(recorded.get(key), now.get(key)))
    # Same projection, different digest: the difference lies outside what old recordings keep.
    return Difference(("prompt or evidence",), None, "outside the recorded projection")
