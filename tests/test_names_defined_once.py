"""Harness, lane and specialist role names are defined once in ``src``: in their tables.

Everything else reads the tables, so adding a harness or a lane cannot silently miss a list. A
second list is any tuple, list, set or dict (keys or values) in ``src`` that names two or more
of them, as strings (``("claude", "codex")``, ``{"bedrock": …, "vertex": …}``,
``click.Choice(["openai", "azure"])``, ``lane in ("anthropic", "bedrock")``) or as adapter
modules (``(claude.HARNESS, codex.HARNESS)``), and any string outside a docstring that joins two
with ``|`` (``--harness claude|codex``). A single comparison (``harness == "claude"``) is code
about one harness, not a list. The provider names count too: the lane table names each lane's
provider.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import active_memory
from active_memory.harnesses import HARNESSES
from active_memory.lanes import LANES, provider_names
from active_memory.roles import ROLES

SRC = Path(active_memory.__file__).parent
TABLES = ("harnesses.py", "lanes.py", "roles.py")
# The hook helper runs as a script without the package, so it keeps its own copy of the names
# and of which harnesses nest their answer; tests/test_harnesses.py checks both against the
# table. Only these two assignments are exempt, not the module.
KEPT = {("hooks/helper.py", "HARNESSES"), ("hooks/helper.py", "_NESTED")}
# The session-end hook runs without the package too (tests/learn/test_session_end.py checks it).
KEPT_LEARN = {("learn/session_end.py", "HARNESSES")}

NAMES = frozenset(
    {row.name for row in HARNESSES}
    | {row.name for row in LANES}
    | set(provider_names())
    | set(ROLES)
)
# Adapter modules are named for their harness: ``claude.HARNESS`` lists the claude harness.
MODULE_NAMES = frozenset(row.name for row in HARNESSES)
_JOINED = re.compile(r"[\w-]+(?:\|[\w-]+)+")


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _named(node: ast.expr | None) -> str | None:
    """The harness or lane ``node`` stands for, if it is one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES:
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        root = _root_name(node)
        return root if root in MODULE_NAMES else None
    return None


def _docstrings(tree: ast.Module) -> set[int]:
    owners = [tree, *(node for node in ast.walk(tree) if isinstance(
        node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]  # fmt: skip
    return {
        id(owner.body[0].value)
        for owner in owners
        if owner.body
        and isinstance(owner.body[0], ast.Expr)
        and isinstance(owner.body[0].value, ast.Constant)
    }


def _assigned_to(tree: ast.Module) -> dict[int, str]:
    """The variable each node's value is assigned to, for the exemptions."""
    owner: dict[int, str] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) and node.value else [])  # fmt: skip
        names = [target.id for target in targets if isinstance(target, ast.Name)]
        if names and isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for inner in ast.walk(node.value):
                owner[id(inner)] = names[0]
    return owner


def second_lists(source: str) -> list[tuple[int, str | None, list[str]]]:
    """Each second list in ``source``: its line, the variable it is assigned to (if any) and
    the names it holds."""
    tree = ast.parse(source)
    docstrings, owner = _docstrings(tree), _assigned_to(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            named = {_named(item) for item in node.elts}
        elif isinstance(node, ast.Dict):
            keys = {_named(key) for key in node.keys}
            values = {_named(value) for value in node.values}
            named = max(keys - {None}, values - {None}, key=len)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            joined = (set(match.group().split("|")) for match in _JOINED.finditer(node.value))
            named = max((words & NAMES for words in joined), key=len, default=set())
        else:
            continue
        named.discard(None)
        if len(named) >= 2:
            found.append((node.lineno, owner.get(id(node)), sorted(str(name) for name in named)))
    return found


def test_harness_lane_and_role_names_are_defined_only_in_their_tables() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        where = path.relative_to(SRC).as_posix()
        if where in TABLES:
            continue
        for line, variable, names in second_lists(path.read_text(encoding="utf-8")):
            if (where, variable) not in KEPT | KEPT_LEARN:
                found.append(f"src/active_memory/{where}:{line}: {', '.join(names)}")
    assert not found, "read these from active_memory.harnesses, .lanes or .roles:\n" + "\n".join(
        found
    )


def test_the_exemptions_are_still_needed() -> None:
    helper = (SRC / "hooks" / "helper.py").read_text(encoding="utf-8")
    assert {("hooks/helper.py", variable) for _, variable, _ in second_lists(helper)} == KEPT
    event = (SRC / "learn" / "session_end.py").read_text(encoding="utf-8")
    found = {("learn/session_end.py", variable) for _, variable, _ in second_lists(event)}
    assert found == KEPT_LEARN


# The lists issue 27 removed, as they were written: each one must be caught again.
REMOVED = [
    'HARNESSES = ("claude", "codex", "pi", "copilot")',
    'HARNESS_NAMES = {"claude": "Claude Code", "codex": "Codex CLI", "pi": "pi",\n'
    '                 "copilot": "Copilot CLI"}',
    "HARNESSES = {h.name: h for h in (claude.HARNESS, codex.HARNESS, copilot.HARNESS, pi.HARNESS)}",
    'HARNESS_LANES = frozenset({"claude-code", "codex", "copilot", "pi"})',
    'ANTHROPIC_LANES = ("anthropic", "bedrock", "vertex")',
    'OPENAI_LANES = ("openai", "azure", "compatible")',
    'LANES = {"anthropic": ("anthropic", "bedrock", "vertex"), "openai": ("openai", "azure")}',
    '_LANES = ("anthropic", "bedrock", "vertex", "openai", "azure", "compatible")',
    '_EXTRAS = {"anthropic": "anthropic", "bedrock": "bedrock", "vertex": "vertex"}',
    'builders = {"openai": _openai_client, "azure": _azure_client}',
    '_REGISTRY = {"anthropic": _anthropic, "openai": _openai}',
    '_HOMES = {"claude": ("CLAUDE_CONFIG_DIR", "~/.claude"), "codex": ("CODEX_HOME", "~/.codex")}',
    '_CONVERSATION = {"claude": ("user", "assistant"), "pi": ("message",)}',
    'given = {"claude": claude_dir, "codex": codex_dir, "pi": pi_dir}',
    'option = click.option("--lane", type=click.Choice(["bedrock", "vertex"]))',
    'if harness in ("claude", "codex"):\n    pass',
    'click.echo("hooks: active-memory hooks install --harness claude|codex|copilot|pi")',
]


@pytest.mark.parametrize("planted", REMOVED)
def test_a_second_list_planted_in_a_real_module_is_caught(planted: str) -> None:
    source = (SRC / "evidence" / "sources" / "detect.py").read_text(encoding="utf-8")
    assert second_lists(source) == []
    caught = second_lists(f"{source}\n{planted}\n")
    assert len(caught) >= 1
    assert caught[0][0] > source.count("\n")


@pytest.mark.parametrize(
    "fine",
    [
        'if harness == "claude":\n    pass',
        'def f():\n    """Reads ``claude|codex|pi`` sessions."""',
        'PREFIXES = ("gpt", "o1", "o3", "o4", "codex")',
        '_PROVIDERS = {"openai-codex": "openai", "azure-openai-responses": "openai"}',
        'row = harness_row("claude")\nNODE_ID = row.lane',
        'message = "a Claude Code, Codex CLI or pi session"',
    ],
)
def test_code_about_one_name_is_no_list(fine: str) -> None:
    assert second_lists(fine) == []
