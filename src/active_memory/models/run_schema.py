"""The JSON Schema of ``run.json``, generated from :class:`~active_memory.models.runs.RunRecord`.

The model is the authority; the schema shipped as ``contracts/run-record.schema.json`` is its
published form for hosts that write records without Python. A test keeps the two equal, so after
changing the model run::

    python -m active_memory.models.run_schema          # rewrite the shipped file
    python -m active_memory.models.run_schema --check  # exit 1 when it is stale

Pydantic's output is tidied to read like a hand-written schema: no per-field titles, a nullable
scalar as ``"type": [..., "null"]``, "any JSON value" as no constraint at all, descriptions cut
to their first paragraph, the usual keywords first, short values on one line.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from active_memory.data_folders import shipped_folder
from active_memory.models.runs import RunRecord

__all__ = [
    "SCHEMA_ID",
    "render_schema",
    "run_record_schema",
    "shipped_schema",
    "shipped_schema_path",
]

_FILE = "run-record.schema.json"
# An identifier, not a location: it stays the same wherever the package keeps the file.
SCHEMA_ID = "https://active-memory.invalid/schemas/run-record.schema.json"
_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_ANY_JSON = "#/$defs/JsonValue"
_LINE = 96
_FIRST = ("$schema", "$id", "$ref", "title", "description", "type", "const", "enum",
          "additionalProperties", "required", "properties", "items")  # fmt: skip


def run_record_schema() -> dict[str, Any]:
    """The Draft 2020-12 schema of a run record document, tidied."""
    generated = RunRecord.model_json_schema(by_alias=True, mode="validation")
    generated.get("$defs", {}).pop("JsonValue", None)
    schema = _tidy(generated, root=True)
    return {"$schema": _DIALECT, "$id": SCHEMA_ID, **schema}


def render_schema() -> str:
    """The schema as the shipped file holds it."""
    return _render(run_record_schema(), "") + "\n"


def _render(value: Any, indent: str) -> str:
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or len(indent) + len(flat) <= _LINE:
        return flat
    inner = indent + "  "
    if isinstance(value, list):
        items = [inner + _render(item, inner) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    pairs = [f"{inner}{json.dumps(k)}: {_render(v, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(pairs) + "\n" + indent + "}"


def shipped_schema_path() -> Path:
    return Path(str(shipped_folder("contracts").joinpath(_FILE)))


def shipped_schema() -> dict[str, Any]:
    """The shipped schema file, as a fresh dict (an author's copy of contracts/ never replaces
    it: records are validated by the model)."""
    schema: dict[str, Any] = json.loads(shipped_schema_path().read_bytes())
    return schema


def _tidy(node: Any, *, root: bool = False) -> Any:
    if isinstance(node, list):
        return [_tidy(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs"):  # names, not keywords: keep every one
            out[key] = {name: _tidy(schema) for name, schema in value.items()}
        elif key == "additionalProperties" and value == {"$ref": _ANY_JSON}:
            continue  # a JSON object's values are JSON: nothing to say
        elif key == "$ref" and value == _ANY_JSON:
            continue
        elif key != "title" or root:
            out[key] = _tidy(value)
    if isinstance(out.get("description"), str):
        first = out["description"].split("\n\n")[0]
        out["description"] = re.sub(r"\s+", " ", first.replace("``", "")).strip()
    nullable = _nullable_scalar(out.get("anyOf"))
    if nullable is not None:
        del out["anyOf"]
        out = {**nullable, **out}
    return {**{key: out[key] for key in _FIRST if key in out},
            **{key: value for key, value in out.items() if key not in _FIRST}}  # fmt: skip


def _nullable_scalar(branches: Any) -> dict[str, Any] | None:
    """``anyOf: [{type: X, ...}, {type: null}]`` as ``{type: [X, null], ...}``."""
    if not isinstance(branches, list) or len(branches) != 2 or branches[1] != {"type": "null"}:
        return None
    value = branches[0]
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        return None
    return {**value, "type": [value["type"], "null"]}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    path = shipped_schema_path()
    text = render_schema()
    if args == ["--check"]:
        if path.read_text("utf-8") == text:
            return 0
        print(f"{path} is stale; run python -m active_memory.models.run_schema", file=sys.stderr)
        return 1
    if args:
        print("usage: python -m active_memory.models.run_schema [--check]", file=sys.stderr)
        return 2
    path.write_text(text, "utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
