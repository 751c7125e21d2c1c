"""Credential formats from detect-secrets, the maintained base of our own list.

detect-secrets (Yelp) keeps one plugin per provider; every plugin built on its
``RegexBasedDetector`` carries a ``denylist`` of compiled patterns. We take those patterns as
they are, so a new provider in a later release of the package is screened without a change
here, and name each one's kind after the plugin's ``secret_type`` (``SendGrid API Key`` becomes
``sendgrid_api_key``). The secret is the pattern's first non-empty group when it has groups
(``://user:(password)@``), else the whole match.

Three plugins are left out on purpose: ``IPPublicDetector`` (an address is not a credential,
and lessons legitimately name hosts), ``JwtTokenDetector`` (its pattern matches any ``eyJ``
prefix and relies on decoding; our own ``jwt`` format needs three segments) and
``ArtifactoryDetector`` (its ``AP[0-9A-F]…`` pattern matches ordinary CamelCase names such as
``APBackupService``).

Loading detect-secrets costs a tenth of a second (its plugins' base imports ``requests``), so
nothing is imported until the first scan, and then only when the installed release is not the
one ``detect_secrets_patterns.json`` was written from: that file holds the kept plugins' patterns
(source and flags) and kinds as the plugins gave them, with each pattern's hints (the literals
one of which every match holds, proven on its parse tree by
:func:`~active_memory.screening.required_literals.required_alternatives`; parsing all 42 costs
about 2.5 ms a process), so the screen compiles instead the few patterns whose hints a text holds
(:func:`plugin_sources`; all 42 cost about 6 ms of CPU).
``tests/screening/test_secrets_detected.py`` checks the file equals what the installed plugins
give, hints included; ``tests/screening/rewrite_detector_hints.py`` writes it.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from active_memory.screening.compiled import compiled
from active_memory.screening.required_literals import required_alternatives

__all__ = [
    "PATTERNS_FILE",
    "PluginPattern",
    "live_patterns",
    "patterns_table",
    "plugin_patterns",
    "plugin_sources",
]

PATTERNS_FILE = "detect_secrets_patterns.json"

_LEFT_OUT = frozenset({"IPPublicDetector", "JwtTokenDetector", "ArtifactoryDetector"})


@dataclass(frozen=True, slots=True)
class PluginPattern:
    """One denylist pattern of one detect-secrets plugin, and the kind it reports."""

    plugin: str
    kind: str
    pattern: re.Pattern[str]
    # Lower-case literals one of which every match holds, in required_literals.case_fold of a text
    # (empty: none proven, the pattern runs over every text).
    hints: tuple[str, ...] = ()

    def secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        for index in range(1, (match.re.groups or 0) + 1):
            if match.group(index):
                return match.span(index)
        return match.span()


def _kind(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


# A pattern as the screen keeps it until a text needs it: kind, source, flags and hints.
PluginSource = tuple[str, str, int, tuple[str, ...]]


def _written() -> list[tuple[str, str, str, int, list[str]]] | None:
    """The rows of :data:`PATTERNS_FILE` (plugin, kind, source, flags, hints), or None when it
    was written from another release than the installed one. Read anew on each call: the two
    callers keep what they make of it."""
    text = resources.files("active_memory.screening").joinpath(PATTERNS_FILE).read_text("utf-8")
    written = json.loads(text)
    if written["version"] != _installed_version():
        return None
    return [(plugin, kind, source, flags, hints) for plugin, kind, source, flags, hints
            in written["patterns"]]  # fmt: skip


@cache
def plugin_patterns() -> tuple[PluginPattern, ...]:
    """Every kept plugin's patterns, ordered by plugin class name (stable across runs): from
    :data:`PATTERNS_FILE` when it was written from the installed release, else from the
    plugins themselves."""
    rows = _written()
    if rows is None:
        return live_patterns()
    return tuple(
        PluginPattern(plugin, kind, compiled(source, flags), tuple(hints))
        for plugin, kind, source, flags, hints in rows
    )


@cache
def plugin_sources() -> tuple[PluginSource, ...]:
    """What :func:`plugin_patterns` gives, in its order, as sources: the screen compiles each
    the first time a text holds one of its hints, so a process compiles the few its texts
    need rather than all 42 (about 6 ms of CPU)."""
    rows = _written()
    if rows is None:
        return tuple(
            (item.kind, item.pattern.pattern, item.pattern.flags, item.hints)
            for item in plugin_patterns()
        )
    return tuple((kind, source, flags, tuple(hints)) for _, kind, source, flags, hints in rows)


# detect-secrets' own record of its release (``detect_secrets/__version__.py``).
_VERSION = re.compile(r"^VERSION\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)


def _installed_version() -> str | None:
    """The installed release of detect-secrets, read from the package's ``__version__.py``
    without importing the package (it loads requests) nor importlib.metadata (about 17 ms of
    CPU in a process that has not loaded it: a SQLite command's first screen); from the
    distribution's metadata when that file does not say."""
    import importlib.util  # here: a command that never scans does not load it

    spec = importlib.util.find_spec("detect_secrets")
    for folder in (spec and spec.submodule_search_locations) or ():
        try:
            found = _VERSION.search(Path(folder, "__version__.py").read_text("utf-8"))
        except OSError:
            continue
        if found:
            return found.group(1)
    import importlib.metadata

    try:
        return importlib.metadata.version("detect-secrets")
    except importlib.metadata.PackageNotFoundError:
        return None


def patterns_table(patterns: tuple[PluginPattern, ...]) -> dict[str, Any]:
    """What :data:`PATTERNS_FILE` holds for ``patterns`` of the installed release."""
    return {
        "version": _installed_version(),
        "patterns": [
            [item.plugin, item.kind, item.pattern.pattern, item.pattern.flags, list(item.hints)]
            for item in patterns
        ],
    }


def live_patterns() -> tuple[PluginPattern, ...]:
    """The kept plugins' patterns, read from the imported plugins."""
    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    found: dict[str, type[RegexBasedDetector]] = {}
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"{plugins.__name__}.{info.name}")
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, RegexBasedDetector)
                and value is not RegexBasedDetector
                and value.__module__ == module.__name__
                and name not in _LEFT_OUT
            ):
                found[name] = value
    patterns: list[PluginPattern] = []
    for name in sorted(found):
        plugin = found[name]()
        kind = _kind(str(plugin.secret_type))
        patterns.extend(
            PluginPattern(name, kind, regex, _hints(regex)) for regex in plugin.denylist
        )
    return tuple(patterns)


def _hints(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """What :attr:`PluginPattern.hints` holds for ``pattern``, proven on its parse tree."""
    return required_alternatives(pattern, folded=True) or ()
