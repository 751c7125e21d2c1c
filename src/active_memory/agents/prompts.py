"""The postmortem specialists' prompts: rendering the Markdown templates of ``prompts/``.

A session's request is laid out for prefix caching: what is the same for every run comes first,
the run's material after it. Each specialist's system prompt is the shared ``preamble.md``, then
its own file, then its contract; it holds no run value, so it is byte-identical across runs (and
its preamble across specialists), and a provider's prompt cache can serve it to every session
of every postmortem. The run's material opens the first message: ``run_material.md`` names the
run and lists what this session has (payload parts, evidence files, tool roots); host facts and
the evidence follow it (``agents/specialists.py``). Templates are read through
:mod:`active_memory.data_folders` (the package's ``prompts/`` or an author's copy). A
placeholder is ``{{name}}`` (lowercase letters, digits and ``_``); double braces keep it apart
from the JSON braces in the prompts' examples. Two kinds of value fill placeholders:

* card limits (``title_bytes``, ``broad_words``, …) come from
  :data:`active_memory.limits.LIMITS` and :data:`~active_memory.limits.BROAD_WORDS`, so a
  prompt can never teach a limit that admission does not enforce; callers cannot override them;
* session values the host supplies (:data:`RUN_VALUES`): ``contract`` (the answer's JSON Schema
  text, the system prompt's only one, the same on every run), and for the run material
  ``run_id``, ``specialist``, ``payload`` (the parts of the evidence payload this specialist
  receives, so the prompt never promises one it lacks), ``evidence_files`` (how to reach the
  private evidence files) and ``tool_roots`` (the roots the session's tools can read).

Every rule sentence of a prompt carries an HTML comment naming the admission codes that enforce
it (``<!-- rule: stage:code, ... -->``) or marking it as judgement left to the model
(``<!-- judgement -->``); tests/agents/prompts/test_prompt_rules.py checks the mapping. The
comments are removed when a template is loaded: the model never sees them.

Rendering fails with :class:`~active_memory.errors.PromptError` on a missing, empty or unknown
value, so a typo cannot ship a prompt with a hole in it. Substitution is a single pass: a value
that itself contains ``{{…}}`` is inserted literally, because values carry run data.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from active_memory.data_folders import active_overrides, read_file
from active_memory.errors import PromptError
from active_memory.limits import BROAD_WORDS, LIMITS
from active_memory.roles import ROLES, Role

__all__ = [
    "LIMIT_VALUES",
    "PREAMBLE",
    "PROMPT_NAMES",
    "RUN_MATERIAL",
    "RUN_VALUES",
    "SPECIALISTS",
    "load_prompt",
    "placeholders",
    "prompt_sha256",
    "render_prompt",
    "run_material",
    "strip_rule_tags",
    "system_prompt",
]

# The specialists are the rows of the specialist table (active_memory.roles).
SPECIALISTS: tuple[Role, ...] = ROLES
PREAMBLE = "preamble"
RUN_MATERIAL = "run_material"
PROMPT_NAMES: tuple[str, ...] = (PREAMBLE, RUN_MATERIAL, *SPECIALISTS)
RUN_VALUES = frozenset(
    {"run_id", "specialist", "payload", "evidence_files", "tool_roots", "contract"}
)

LIMIT_VALUES: Mapping[str, str] = MappingProxyType(
    {
        "title_bytes": str(LIMITS.title_bytes),
        "recommendation_bytes": str(LIMITS.recommendation_bytes),
        "reason_bytes": str(LIMITS.reason_bytes),
        "references_min": str(LIMITS.references_min),
        "references_max": str(LIMITS.references_max),
        "files_max": str(LIMITS.files),
        "folders_max": str(LIMITS.folders),
        "path_bytes": str(LIMITS.path_bytes),
        "identifiers_max": str(LIMITS.identifiers),
        "identifier_min_chars": str(LIMITS.identifier_min_chars),
        "identifier_max_chars": str(LIMITS.identifier_max_chars),
        "keyword_groups_max": str(LIMITS.keyword_groups),
        "keyword_group_min_terms": str(LIMITS.keyword_group_min_terms),
        "keyword_group_max_terms": str(LIMITS.keyword_group_max_terms),
        "keyword_min_chars": str(LIMITS.keyword_min_chars),
        "keyword_max_chars": str(LIMITS.keyword_max_chars),
        "broad_words": ", ".join(sorted(BROAD_WORDS)),
    }
)

_PLACEHOLDER = re.compile(r"\{\{([a-z][a-z0-9_]*)\}\}")
# A rule tag and the blank space before it (a tag on its own line takes its line break along).
_COMMENT = re.compile(r"[ \t]*(?:\n[ \t]*)?<!--.*?-->", re.DOTALL)
_SEPARATOR = "\n\n"


def _check_name(name: str, allowed: tuple[str, ...]) -> None:
    if name not in allowed:
        raise PromptError(name, f"unknown prompt; expected one of {list(allowed)!r}")


def _names_in(template: str) -> frozenset[str]:
    return frozenset(_PLACEHOLDER.findall(template))


def load_prompt(name: str) -> str:
    """The raw template text of ``preamble``, ``run_material`` or a specialist, checked for
    malformed placeholders.

    Inside :func:`~active_memory.data_folders.using_overrides` with a copy of ``prompts/``, the
    copy's ``NAME.md`` is read instead of the shipped file."""
    _check_name(name, PROMPT_NAMES)
    return _load(active_overrides().prompts, name)


# Keyed by the folder in force too: a copy's template is checked once, apart from the shipped one.
@functools.cache
def _load(folder: Path | None, name: str) -> str:
    try:
        text = read_file("prompts", f"{name}.md").decode("utf-8")
    except UnicodeDecodeError as error:
        where = "the shipped file" if folder is None else repr(str(folder / f"{name}.md"))
        raise PromptError(name, f"{where} is not UTF-8 text") from error
    return _check_template(name, text)


def strip_rule_tags(text: str) -> str:
    """``text`` without its HTML comments (the rule tags), as the model receives it."""
    return _COMMENT.sub("", text)


def _check_template(name: str, text: str) -> str:
    text = strip_rule_tags(text)
    if "{{" in _PLACEHOLDER.sub("", text):
        raise PromptError(name, "contains '{{' that is not a {{lowercase_name}} placeholder")
    unknown = sorted(_names_in(text) - LIMIT_VALUES.keys() - RUN_VALUES)
    if unknown:
        raise PromptError(
            name,
            f"uses placeholders {unknown!r} that are neither card limits nor run values "
            f"{sorted(RUN_VALUES)!r}",
            unknown,
        )
    return text


def placeholders(name: str) -> frozenset[str]:
    """The run values a prompt needs; for a specialist this includes the preamble's."""
    if name in SPECIALISTS:
        return _names_in(_system_template(name)) & RUN_VALUES
    return _names_in(load_prompt(name)) & RUN_VALUES


def _system_template(specialist: str) -> str:
    _check_name(specialist, SPECIALISTS)
    return load_prompt(PREAMBLE) + _SEPARATOR + load_prompt(specialist)


def _render(label: str, template: str, values: Mapping[str, object]) -> str:
    fixed = sorted(values.keys() & LIMIT_VALUES.keys())
    if fixed:
        problem = f"{fixed!r} come from the card limits in active_memory.limits; do not pass them"
        raise PromptError(label, problem, fixed)
    needed = _names_in(template) & RUN_VALUES
    missing = sorted(needed - values.keys())
    if missing:
        shown = ", ".join(f"{{{{{name}}}}}" for name in missing)
        hint = ", ".join(f"{name}=..." for name in missing)
        raise PromptError(label, f"no value for placeholder {shown}; pass {hint}", missing)
    unknown = sorted(values.keys() - needed)
    if unknown:
        problem = f"got values {unknown!r} it has no placeholder for; it uses {sorted(needed)!r}"
        raise PromptError(label, problem, unknown)
    for name, value in values.items():
        if not isinstance(value, str):
            problem = f"value for {{{{{name}}}}} must be a string, got {type(value).__name__}"
            raise PromptError(label, problem, [name])
        if not value.strip():
            raise PromptError(label, f"value for {{{{{name}}}}} is empty", [name])
    filled = {**LIMIT_VALUES, **values}
    return _PLACEHOLDER.sub(lambda match: str(filled[match.group(1)]), template)


def render_prompt(name: str, **values: str) -> str:
    """Render one template (``preamble``, ``run_material`` or a specialist file) with exactly
    its run values."""
    return _render(name, load_prompt(name), values)


def system_prompt(specialist: str, **values: str) -> str:
    """The complete system prompt of a specialist: the preamble, its own instructions, its
    contract. No run value enters it, so it is the same bytes on every run."""
    return _render(specialist, _system_template(specialist), values)


def run_material(**values: str) -> str:
    """The head of a session's first message: which run, which specialist, and what the
    session has for it (``run_id``, ``specialist``, ``payload``, ``evidence_files``,
    ``tool_roots``)."""
    return _render(RUN_MATERIAL, load_prompt(RUN_MATERIAL), values)


def prompt_sha256(specialist: str) -> str:
    """Identifies the prompt as shipped: preamble + specialist + run material, card limits
    filled in, run values left as placeholders. Reports record it so a lesson can be traced to
    its prompt."""
    template = _system_template(specialist) + _SEPARATOR + load_prompt(RUN_MATERIAL)
    shipped = _PLACEHOLDER.sub(
        lambda match: LIMIT_VALUES.get(match.group(1), match.group(0)), template
    )
    return hashlib.sha256(shipped.encode("utf-8")).hexdigest()
