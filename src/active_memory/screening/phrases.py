"""Phrase tables of planted instructions in other languages than English, as data.

The tables are package data (``phrases.toml``): one table per language (ISO 639-1 code), one
entry per part of an instruction, each the alternatives of a regular expression, lower case,
written as :func:`active_memory.screening.normalise.plain` leaves text: accents taken off Latin
letters (``precedentes``, ``schlussel``, ``senha``), other scripts as they are.
:func:`languages` reads them once; :mod:`active_memory.screening.languages` compiles them and
says how the parts combine:

* ``verbs`` (ignore, forget, disregard) near ``nouns`` (instructions, prompt, orders) with any
  marker, ``prior`` (previous, above, system, original) or ``all`` (all, your); or near
  ``rules`` (rules, guidelines) with a ``prior`` marker: ``override_instructions``;
* ``override`` and ``role``: whole phrases (``new instructions:``, ``show your system prompt``;
  ``you are now a…``): ``override_instructions`` and ``role_play``;
* ``approve`` (approve, answer LGTM, mark as passed) near ``always`` (always, whatever
  happens, even if the tests fail, without checking), with no ``condition`` (once CI is green)
  in the clause: ``forced_verdict``;
* ``send`` near a ``secret`` (the shared ASCII list in :data:`SHARED_SECRET` too) and a place
  ``outside`` (:data:`SHARED_OUTSIDE` too: a URL, a mail address, a webhook): ``exfiltration``.

A ``negation`` near the verb (never, do not, forbidden) makes any of them a warning. The
words are each language's everyday ones, written for this table.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "MIRROR",
    "PARTS",
    "SCRIPTIO_CONTINUA",
    "SHARED_OUTSIDE",
    "SHARED_SECRET",
    "TABLES",
    "languages",
    "mirror",
]

TABLES = "phrases.toml"
# The tables as tomllib reads them, beside the digest of the TOML they were read from: JSON
# loads in C (about 0.2 ms), the TOML parser is Python (about 4 ms of every process's first
# screen, and 2 ms to import it). A mirror whose digest is not the TOML's is not used, so an
# edited table is read from the TOML until the mirror is rewritten
# (``tests/screening/rewrite_detector_hints.py``; a test fails meanwhile).
MIRROR = "phrases.json"

PARTS = (
    "verbs", "nouns", "rules", "prior", "all", "override", "role", "always", "approve",
    "condition", "send", "secret", "outside", "negation",
)  # fmt: skip

# Written without spaces between words, or with marks that are not word characters: no \b.
SCRIPTIO_CONTINUA = frozenset({"zh", "ja", "ko", "hi"})

SHARED_SECRET = (
    r"~/\.ssh|\.ssh\b|id_rsa|id_ed25519|\.env\b|\.aws\b|\.netrc|\bapi[ _-]?keys?\b|\btokens?\b"
    r"|\bsecrets?\b|\bcredentials?\b|\bpasswords?\b|\bkubeconfig\b|\bprivate[ _-]?keys?\b"
    r"|\$\{?\w{0,40}(?:token|secret|password|api_?key)"
)
SHARED_OUTSIDE = (
    r"https?://(?!(?:localhost|127\.\d|0\.0\.0\.0|\[::1\])(?:[:/]|$))|\bftp://|\bs3://"
    r"|[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,}|\bwebhooks?\b|\bpastebin\b|\bngrok\b|\brequestbin\b"
    r"|\bdiscord\b|\btelegram\b"
)


@cache
def languages() -> dict[str, dict[str, str]]:
    """Every language's row: part name to one alternation. A table missing a part fails here,
    on first use, naming the language and the part."""
    folder = resources.files("active_memory.screening")
    text = folder.joinpath(TABLES).read_text("utf-8")
    kept = json.loads(folder.joinpath(MIRROR).read_text("utf-8"))
    tables = kept["tables"] if kept["digest"] == _digest(text) else mirror(text)["tables"]
    rows: dict[str, dict[str, str]] = {}
    for language, table in tables.items():
        missing = [part for part in PARTS if part not in table]
        if missing:
            raise ValueError(f"phrases.toml: [{language}] has no {', '.join(missing)}")
        rows[language] = {part: "|".join(table[part]) for part in PARTS}
    return rows


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mirror(text: str) -> dict[str, Any]:
    """What :data:`MIRROR` holds for the TOML ``text``: its digest and its tables."""
    import tomllib  # here: read only when the mirror is not the TOML's

    return {"digest": _digest(text), "tables": tomllib.loads(text)}
