"""The shipped agent skill and where each host agent finds a user's skills.

Claude Code reads ``~/.claude/skills/NAME/SKILL.md`` (``$CLAUDE_CONFIG_DIR/skills`` when that is
set); Codex reads ``~/.agents/skills/NAME/SKILL.md``, the user scope of the open agent skills
layout (each harness's ``skills`` in :mod:`active_memory.harnesses`). An existing SKILL.md
that active-memory did not install is left alone unless forced.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from active_memory.harnesses import HARNESSES
from active_memory.private_files import write_private_text

__all__ = ["SKILL_NAME", "InstalledSkill", "install_skills", "skill_targets", "skill_text"]

SKILL_NAME = "active-memory-init"
MARKER = "installed by `active-memory skills install`"

Outcome = Literal["installed", "updated", "unchanged", "kept"]


@dataclass(frozen=True, slots=True)
class InstalledSkill:
    host: str
    path: Path
    outcome: Outcome


def skill_text() -> str:
    return (resources.files(__package__) / "skills" / SKILL_NAME / "SKILL.md").read_text("utf-8")


def skill_targets(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Where each harness that reads skills finds this one (its row's ``skills`` folder)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    targets: dict[str, Path] = {}
    for row in HARNESSES:
        if row.skills is None:
            continue
        if row.skills.startswith("~/"):
            folder = home / row.skills[2:]
        else:
            own = env.get(row.home_variable)
            folder = (Path(own) if own else home / row.home) / row.skills
        targets[row.name] = folder / SKILL_NAME / "SKILL.md"
    return targets


def install_skills(
    *, force: bool = False, env: Mapping[str, str] | None = None
) -> list[InstalledSkill]:
    """Write the skill for every host; a foreign SKILL.md at the path is ``kept`` unless
    ``force``. The file is a user's own instruction file: readable by the user only."""
    text = skill_text()
    done: list[InstalledSkill] = []
    for host, path in skill_targets(env).items():
        outcome: Outcome = "installed"
        if path.exists():
            current = path.read_text("utf-8", errors="replace")
            if current == text:
                done.append(InstalledSkill(host, path, "unchanged"))
                continue
            if MARKER not in current and not force:
                done.append(InstalledSkill(host, path, "kept"))
                continue
            outcome = "updated"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private_text(path, text)
        done.append(InstalledSkill(host, path, outcome))
    return done
