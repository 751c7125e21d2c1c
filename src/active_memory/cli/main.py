"""Entry point of ``active-memory``: the root group and its command registry.

Each concern registers one command or group here; commands parse, call the library and format.
Exit codes: 0 success, 1 the work failed, 2 bad input (click's own usage errors are 2 too).
"""

from __future__ import annotations

import click

from active_memory import __version__
from active_memory.cli.contracts import contracts
from active_memory.cli.demo import demo
from active_memory.cli.evidence import evidence
from active_memory.cli.hooks import hooks
from active_memory.cli.lesson_stats import stats_command
from active_memory.cli.lessons import lessons
from active_memory.cli.mcp import mcp_command
from active_memory.cli.memory import memory
from active_memory.cli.postmortem import postmortem, specialist
from active_memory.cli.recall import recall
from active_memory.cli.retire import retire_command
from active_memory.cli.review import review
from active_memory.cli.runlog import runlog
from active_memory.cli.serve import serve
from active_memory.cli.server import server
from active_memory.cli.sessions import sessions
from active_memory.cli.skills import skills
from active_memory.cli.specialist_eval import eval_command
from active_memory.cli.specialist_prompt import prompt_command
from active_memory.cli.store import store
from active_memory.cli.ui import ui


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="active-memory")
def main() -> None:
    """Lesson memory for multi-agent coding workflows."""


main.add_command(store)
lessons.add_command(review)
main.add_command(lessons)
lessons.add_command(retire_command)
lessons.add_command(stats_command)
main.add_command(recall)
main.add_command(hooks)
main.add_command(serve)
main.add_command(mcp_command)
main.add_command(server)
main.add_command(evidence)
main.add_command(sessions)
main.add_command(postmortem)
main.add_command(specialist)
specialist.add_command(prompt_command)
specialist.add_command(eval_command)
main.add_command(contracts)
main.add_command(demo)
main.add_command(runlog)
main.add_command(memory)
main.add_command(skills)
main.add_command(ui)


if __name__ == "__main__":  # pragma: no cover
    main()
