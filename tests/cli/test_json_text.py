"""Every ``--json`` prints what ``json.dumps(indent=2, ensure_ascii=False, sort_keys=True)``
would, though ``json_text`` writes it with its own walk."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from active_memory.cli.store_location import json_text

_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(), inner, max_size=5)
    ),
    max_leaves=40,
)


def _standard(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_the_walk_prints_what_json_dumps_prints(value: Any) -> None:
    assert json_text(value) == _standard(value)


def test_keys_that_are_not_strings_are_converted_as_json_dumps_converts_them() -> None:
    value = {"b": {2: "two", 1: "one"}, "a": [{"é": "ü\n\u2028"}], "c": {}}
    assert json_text(value) == _standard(value)
    assert '"1": "one"' in json_text(value)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [({"x": object()}, TypeError, "is not JSON serializable"), ("loop", ValueError, "Circular")],
)
def test_a_value_json_cannot_encode_fails_as_json_dumps_fails(
    bad: Any, error: type[Exception], message: str
) -> None:
    if bad == "loop":
        bad = []
        bad.append(bad)
    with pytest.raises(error, match=message):
        _standard(bad)
    with pytest.raises(error, match=message):
        json_text(bad)
