"""Hypothesis strategies for hostile input, and the check every entry point must pass.

A hostile document is raw bytes, arbitrary text, JSON nested past any limit, a number past
Python's 4,300-digit limit, a lone surrogate escape, a NUL, or a valid document with one of
those planted at a random place. Whatever it is, a command answers with success or with one
sentence on stderr and exit 2: never a traceback.
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import Result
from hypothesis import strategies as st

__all__ = [
    "HOSTILE_VALUES",
    "hostile_bytes",
    "one_sentence_or_success",
    "planted",
]

_deep = st.integers(60, 3000).map(lambda n: "[" * n + "]" * n)
_deep_objects = st.integers(60, 1500).map(lambda n: '{"a":' * n + "1" + "}" * n)
_unbalanced = st.integers(1, 5000).map(lambda n: "[" * n)
_long_int = st.integers(90, 6000).map(lambda n: "9" * n)
_long_float = st.integers(90, 6000).map(lambda n: "0." + "1" * n)
_surrogates = st.sampled_from(['"\\ud800"', '"\\udfff tail"', '"a\\udc80b"', '{"\\ud800": 1}'])
_snippets = st.sampled_from(
    ['"a\\u0000b"', "NaN", "-Infinity", "1e999999", "-0", "null", "true", '""', "{}", "[]",
     '"\\n\\n"', "9223372036854775808", "-9223372036854775809", "18446744073709551616"]
)  # fmt: skip
_json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40)
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
).map(json.dumps)

# A JSON text (or near-JSON) to plant as a value somewhere.
HOSTILE_VALUES = st.one_of(
    _deep, _deep_objects, _unbalanced, _long_int, _long_float, _surrogates, _snippets, _json_values
)


def hostile_bytes() -> st.SearchStrategy[bytes]:
    """A whole document: any bytes, any text, or one hostile JSON value."""
    return st.one_of(
        st.binary(max_size=2000),
        st.text(max_size=500).map(lambda text: text.encode("utf-8", "surrogatepass")),
        HOSTILE_VALUES.map(str.encode),
        st.binary(max_size=40).map(lambda junk: b'{"run_id": "' + junk + b'"}'),
    )


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


_MARKER = "@@HOSTILE@@"


def planted(document: Any) -> st.SearchStrategy[bytes]:
    """``document`` as JSON with one value (or the whole) replaced by a hostile value, or its
    text cut or spliced at a random byte."""
    paths = _paths(document)

    def plant(path: tuple[Any, ...], value: str) -> bytes:
        copy = json.loads(json.dumps(document))
        if not path:
            return value.encode()
        parent = copy
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = _MARKER
        return json.dumps(copy).replace(json.dumps(_MARKER), value, 1).encode()

    text = json.dumps(document).encode()
    spliced = st.tuples(st.integers(0, len(text)), st.binary(max_size=8)).map(
        lambda cut: text[: cut[0]] + cut[1] + text[cut[0] + len(cut[1]) :]
    )
    return st.one_of(
        st.tuples(st.sampled_from(paths), HOSTILE_VALUES).map(lambda pv: plant(*pv)),
        spliced,
        st.integers(0, len(text)).map(lambda cut: text[:cut]),
    )


def one_sentence_or_success(result: Result, *, failure_codes: tuple[int, ...] = (2,)) -> bool:
    """Assert ``result`` succeeded or failed with one ``error:`` line; True when it failed."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {result.exception!r}") from result.exception
    if result.exit_code == 0:
        return False
    assert result.exit_code in failure_codes, (result.exit_code, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    return True
