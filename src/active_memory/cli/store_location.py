"""``active-memory store path``'s answer, with the standard library alone.

Shell scripts and prompts call ``store path`` to find the store; loading click alone costs
several times an interpreter's start-up. The console script (:mod:`active_memory.cli.entry`)
answers the command's plain forms with this module before it loads the command line, and the
click command prints the same text through it, so the two cannot drift.
"""

from __future__ import annotations

import json
import os
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

# Exactly the argument lists answered without click; any other (a --store, --help, a typo) goes
# through the command line, which validates and reports it.
PLAIN_FORMS = (("store", "path"), ("store", "path", "--json"))


def json_text(data: Any) -> str:
    """How every ``--json`` of the command line prints: indented, keys sorted, UTF-8 kept.

    Exactly ``json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)``, written here
    because the standard library's indented output runs its pure-Python encoder: twice the time
    of this walk, which leaves the strings to the C escaper (a large ``lessons impact --json``
    spent a fifth of its time there). A key that is not a string goes back to ``json.dumps``,
    which converts it."""
    parts: list[str] = []
    try:
        _indented(data, "", parts)
    except (_NotPlain, RecursionError):  # json.dumps converts the key, or names the cycle
        return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)
    return "".join(parts)


class _NotPlain(Exception):
    """A value ``json_text``'s walk leaves to ``json.dumps``."""


def _indented(value: Any, pad: str, parts: list[str]) -> None:
    if isinstance(value, str):
        parts.append(encode_basestring(value))
    elif value is None or value is True or value is False:
        parts.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        parts.append(json.dumps(value))
    elif isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise _NotPlain
        _container(sorted(value.items()), "{}", pad, parts)
    elif isinstance(value, list | tuple):
        _container(value, "[]", pad, parts)
    else:
        raise _NotPlain  # json.dumps raises its own TypeError for it


def _container(items: Any, brackets: str, pad: str, parts: list[str]) -> None:
    if not items:
        parts.append(brackets)
        return
    inner = pad + "  "
    parts.append(brackets[0] + "\n" + inner)
    for index, item in enumerate(items):
        if index:
            parts.append(",\n" + inner)
        if brackets == "{}":
            key, item = item
            parts.append(encode_basestring(key) + ": ")
        _indented(item, inner, parts)
    parts.append("\n" + pad + brackets[1])


def store_path_text(chosen: Path, *, as_json: bool) -> str:
    """The store's path, or with ``as_json`` the path and whether something exists there."""
    if as_json:
        return json_text({"path": str(chosen), "exists": os.path.lexists(chosen)})
    return str(chosen)


def answer_plain_form(argv: list[str]) -> str | None:
    """The output of ``active-memory ARGV`` when it is a plain ``store path``, else None (also
    when the default location is misconfigured: the command line reports that)."""
    if tuple(argv) not in PLAIN_FORMS:
        return None
    from active_memory.errors import ConfigError
    from active_memory.store.paths import default_store_path

    try:
        chosen = default_store_path()
    except ConfigError:
        return None
    return store_path_text(chosen, as_json=argv[-1] == "--json")
