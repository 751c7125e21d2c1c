"""canonical_json: one shared encoder gives ``json.dumps``' canonical text for every input.

Row checksums and graph hashes are computed over this text, so a byte of difference would
refuse every stored row (or move every graph lesson's hash)."""

from __future__ import annotations

import enum
import json
import threading
from collections import OrderedDict

import pytest

from active_memory.store.codec import canonical_json


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class _Text(str):
    pass


class _Number(float):
    def __repr__(self) -> str:  # json writes float.__repr__, never a subclass's
        return "not a number"


class _Level(enum.IntEnum):
    HIGH = 2


VALUES = [
    'é \u2028 \ud800 \x00 \x1f " \\ 😀',
    {"b": 1, "a": [1, {"z": "ü", "y": None}], "": (True, False)},
    {1: "a", 2.5: "b", False: "c"},  # keys written as JSON strings, then sorted
    {_Text("k"): _Text("v"), "n": _Number(1.25), "level": _Level.HIGH},
    {_Level.HIGH: "high", 1: "one"},
    OrderedDict(b=1, a=2),
    [float("nan"), float("inf"), -0.0, 10**40, 1e-7],
]


@pytest.mark.parametrize("value", VALUES)
def test_the_shared_encoder_writes_what_json_dumps_writes(value: object) -> None:
    assert canonical_json(value) == _dumps(value)


@pytest.mark.parametrize("value", [{1: "a", None: "b"}, {(1,): 2}, {1, 2}, b"x", object()])
def test_the_shared_encoder_refuses_what_json_dumps_refuses(value: object) -> None:
    with pytest.raises(TypeError) as expected:
        _dumps(value)
    with pytest.raises(TypeError) as refused:
        canonical_json(value)
    assert str(refused.value) == str(expected.value)


def test_the_shared_encoder_keeps_no_state_between_calls_or_threads() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(loop)
    documents = [{f"k{n}-{m}": [n, m, str(n * m)] for m in range(40)} for n in range(20)]
    expected = [_dumps(document) for document in documents]
    wrong: list[str] = []

    def encode_all() -> None:
        for _ in range(50):
            wrong.extend(
                t for d, e in zip(documents, expected, strict=True) if (t := canonical_json(d)) != e
            )

    threads = [threading.Thread(target=encode_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert canonical_json(loop[:0]) == "[]"  # a refused call left nothing behind
