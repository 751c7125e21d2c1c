"""Entry point of ``active-memory``: the root group and its table of commands.

Each concern is one row here, ``name -> Lazy("module:attribute", short help)``; its module is
imported only when the command runs or shows its help (:mod:`active_memory.cli.lazy`), so a
command pays for what it uses and ``--help`` for none of it. Commands parse, call the library
and format. Exit codes: 0 success, 1 the work failed, 2 bad input (click's own usage errors are
2 too).
"""

from __future__ import annotations

import click

from active_memory import __version__
from active_memory.cli.lazy import Lazy, LazyGroup

COMMANDS = {
    "contracts": Lazy("active_memory.cli.contracts:contracts",
                      "The specialists' JSON answer contracts."),
    "demo": Lazy("active_memory.cli.demo:demo",
                 "Replay two recorded postmortems into a fresh store and show the lessons and "
                 "recall."),
    "evidence": Lazy("active_memory.cli.evidence:evidence",
                     "Print the evidence a postmortem specialist would receive about RUN."),
    "hooks": Lazy("active_memory.cli.hooks:hooks",
                  "Harness hooks that deliver recalled lessons."),
    "learn": Lazy("active_memory.cli.learn:learn",
                  "Learning that runs by itself: the sessions queued at their end, and the "
                  "worker."),
    "lessons": Lazy("active_memory.cli.lessons:lessons", "Read and administer stored lessons."),
    "mcp": Lazy("active_memory.cli.mcp:mcp_command",
                "Serve recall, explain and list to an MCP client over stdio (read-only)."),
    "memory": Lazy("active_memory.cli.memory:memory",
                   "Memory-wide workflows (initialisation from local history)."),
    "postmortem": Lazy("active_memory.cli.postmortem:postmortem",
                       "Review a recorded RUN with the four specialists and publish the lessons "
                       "admitted."),
    "recall": Lazy("active_memory.cli.recall:recall",
                   "Show what a tool call would receive from the store, with the match report."),
    "runlog": Lazy("active_memory.cli.runlog:runlog", "Read postmortem run logs."),
    "serve": Lazy("active_memory.cli.serve:serve",
                  "Serve recall to harness hooks until interrupted; reload when lessons change."),
    "server": Lazy("active_memory.cli.server:server",
                   "The team memory service: snapshot and publication over HTTP for remote "
                   "hosts."),
    "sessions": Lazy("active_memory.cli.sessions:sessions",
                     "List the finished sessions of Claude Code, Codex, pi and Copilot CLI found "
                     "here, with their checkout, times, size and models, and whether a "
                     "postmortem can review each."),
    "skills": Lazy("active_memory.cli.skills:skills",
                   "The agent skills active-memory ships (for Claude Code and Codex)."),
    "specialist": Lazy("active_memory.cli.specialist:specialist",
                       "Run one postmortem specialist on its own (for prompt authors)."),
    "store": Lazy("active_memory.cli.store:store", "Inspect and back up the lesson store."),
    "ui": Lazy("active_memory.cli.ui:ui",
               "Browse lessons, their cards, revisions and ledgers, the quarantine and the "
               "runs."),
}  # fmt: skip


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="active-memory")
def main() -> None:
    """Lesson memory for multi-agent coding workflows."""


if __name__ == "__main__":  # pragma: no cover
    from active_memory.cli.entry import run_paused

    run_paused(main)  # started as the console script starts, the collector off while loading
