"""The shape stage: is the answer a JSON object of the role's contract, and which items are not?

A malformed whole (not an object, not JSON, over the size cap, a missing or foreign top-level
key, a list that is not a list) refuses the answer: nothing is judged. A malformed item refuses
that item alone, so one lesson with ``associations: {}`` where the contract says null does not
cost the other lessons of the answer. An item identical to an earlier one is the same item said
twice (``duplicate_item``): the earlier one alone is judged. A proposal is identical when its
card is (title, recommendation, associations, node, repository flag): the same lesson argued
twice with another reason or other references would still be published twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from active_memory.admission import contract_sha256, load_contract
from active_memory.models.changes import Rejection
from active_memory.roles import RoleRow

__all__ = ["MAX_SHAPE_REJECTIONS", "shape_rejections"]

# Enough to see what is wrong with a malformed answer without flooding the run log.
MAX_SHAPE_REJECTIONS = 20


def _validator(contract: str) -> Draft202012Validator:
    # Keyed by the file's digest too: an author's folder may replace the shipped contract.
    return _compiled(contract, contract_sha256(contract))


@cache
def _compiled(contract: str, sha256: str) -> Draft202012Validator:
    return Draft202012Validator(load_contract(contract))


def _item_index(path: Sequence[object]) -> int:
    if len(path) >= 2 and path[0] in ("decisions", "lessons") and isinstance(path[1], int):
        return path[1]
    return -1


# What a proposal says beside its card: why, and from what evidence.
_ARGUMENT = ("reason", "references")


def _canonical(item: object) -> str:
    if isinstance(item, Mapping) and "title" in item and "recommendation" in item:
        item = {key: value for key, value in item.items() if key not in _ARGUMENT}
    return json.dumps(item, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _duplicate_items(answer: Mapping[str, Any]) -> tuple[int, ...]:
    """Indexes of items identical to an earlier item of the same list (a proposal: the same
    card): one item, said twice."""
    duplicates: list[int] = []
    for items in answer.values():
        if not isinstance(items, list):
            continue
        seen: set[str] = set()
        for index, item in enumerate(items):
            canonical = _canonical(item)
            if canonical in seen:
                duplicates.append(index)
            seen.add(canonical)
    return tuple(duplicates)


def shape_rejections(answer: object, spec: RoleRow, max_bytes: int) -> tuple[Rejection, ...]:
    """The shape stage: a JSON object, within ``max_bytes`` serialized, matching the role's
    contract. Codes name the failing JSON Schema keyword (``schema_required``…).

    A rejection with index -1 is the whole answer's (not an object, too large, a missing or
    foreign top-level key, a list that is not a list): nothing is judged. Otherwise each
    rejection refuses one item, the first error found in it, and the rest of the answer is
    judged; an item identical to an earlier one is ``duplicate_item`` (it is the same item,
    said twice, so the earlier one alone is judged)."""
    if not isinstance(answer, Mapping):
        return (Rejection(stage="shape", role=spec.name, code="not_an_object", index=-1),)
    try:
        encoded = json.dumps(answer, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return (Rejection(stage="shape", role=spec.name, code="not_json", index=-1),)
    if len(encoded.encode("utf-8")) > max_bytes:
        return (Rejection(stage="shape", role=spec.name, code="answer_too_large", index=-1),)
    errors = sorted(
        _validator(spec.contract).iter_errors(answer),
        key=lambda error: (json.dumps(list(error.absolute_path)), str(error.validator)),
    )
    whole = [error for error in errors if _item_index(error.absolute_path) < 0]
    if whole:
        return tuple(
            Rejection(stage="shape", role=spec.name, code=f"schema_{error.validator}", index=-1)
            for error in whole[:MAX_SHAPE_REJECTIONS]
        )
    # A repeat is the same item said twice even when it is malformed: named duplicate_item
    # first, so a repeated malformed decision does not count twice for coverage.
    first: dict[int, str] = dict.fromkeys(_duplicate_items(answer), "duplicate_item")
    for error in errors:
        first.setdefault(_item_index(error.absolute_path), f"schema_{error.validator}")
    return tuple(
        Rejection(stage="shape", role=spec.name, code=code, index=index)
        for index, code in sorted(first.items())
    )
