"""``active-memory store path``'s answer, with the standard library alone.

Shell scripts and prompts call ``store path`` to find the store; loading click alone costs
several times an interpreter's start-up. The console script (:mod:`active_memory.cli.entry`)
answers the command's plain forms with this module before it loads the command line, and the
click command prints the same text through it, so the two cannot drift.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

# Exactly the argument lists answered without click; any other (a --store, --help, a typo) goes
# through the command line, which validates and reports it.
PLAIN_FORMS = (("store", "path"), ("store", "path", "--json"))


def json_text(data: Any) -> str:
    """How every ``--json`` of the command line prints: indented, keys sorted, UTF-8 kept."""
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)


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
