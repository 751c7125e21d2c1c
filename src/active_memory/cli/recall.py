"""``active-memory recall``: what one tool call would receive, and why.

Reads the workspace's repository lessons from the store (read-only), matches one tool call and
prints the framed context with a report of every matched card (score, the association that
matched, delivered / already delivered / left out for budget). Nothing is recorded: the command
only shows. ``--conversation`` takes that conversation's earlier standalone deliveries into
account.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from active_memory.bounded_input import parse_json, read_bytes, read_stream, read_text
from active_memory.cli._common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    BoundedInt,
    binary_stdin,
    emit_json,
    fail,
    open_store,
    store_json_command,
    store_path,
    workspace_option,
)
from active_memory.errors import InputRefused
from active_memory.harnesses import HARNESS_NAMES
from active_memory.hooks.dispatch import harness_adapter
from active_memory.hooks.fallback import exposure_file
from active_memory.models.config import ActiveMemoryConfig
from active_memory.recall.index import RecallIndex
from active_memory.recall.recall_session import Caller, RecallReport, RecallSession
from active_memory.recall.signals import ToolCall, WorkspaceRoot
from active_memory.repository import repository_key
from active_memory.store.backend import RunIdentity, SnapshotRequest

# A harness's hook payload; the hook helper itself reads at most 256 KiB of one.
_MAX_PAYLOAD = 1024 * 1024
_MAX_LEDGER = 16 * 1024 * 1024  # id@revision keys of one conversation

__all__ = ["recall"]


def _detect(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return None
    if "tool_name" in payload:
        return "claude"
    if "toolName" in payload:
        return "copilot"
    if "tool" in payload:
        return "pi"
    return None


def _tool_call(
    tool_json: str | None, file: str | None, command: str | None, harness: str | None, cwd: str
) -> tuple[ToolCall, str | None]:
    chosen = [name for name, value in (("--tool-json", tool_json), ("--file", file),
                                       ("--command", command)) if value is not None]  # fmt: skip
    if len(chosen) != 1:
        fail("give exactly one of --tool-json, --file or --command", EXIT_BAD_INPUT)
    if file is not None:
        return ToolCall("Read", {"file_path": file}, cwd), None
    if command is not None:
        return ToolCall("Bash", {"command": command}, cwd), None
    source = tool_json or "-"
    what = "standard input" if source == "-" else repr(source)
    try:
        if source == "-":
            data = read_stream(binary_stdin(), what=what, max_bytes=_MAX_PAYLOAD)
        else:
            data = read_bytes(source, what=what, max_bytes=_MAX_PAYLOAD)
        payload = parse_json(data, what=what)
    except InputRefused as refused:
        fail(f"cannot read a hook payload: {refused}", EXIT_BAD_INPUT)
    name = harness or _detect(payload)
    adapter = harness_adapter(name) if name else None
    parsed = adapter.parse(payload) if adapter is not None else None
    if parsed is None:
        fail(
            f"{source!r} is not a hook payload of a known harness; pass --harness",
            EXIT_BAD_INPUT,
        )
    call = parsed.call if parsed.call.cwd else ToolCall(parsed.call.tool, parsed.call.arguments,
                                                        cwd)  # fmt: skip
    return call, parsed.session_id


def _print_report(report: RecallReport) -> None:
    click.echo(
        f"tool {report.tool}; paths: {', '.join(report.paths) or '(none)'}; "
        f"{len(report.cards)} matched; {report.used_bytes} of {report.budget_bytes} bytes used"
    )
    for card in report.cards:
        outcome = card.outcome.replace("_", " ")
        click.echo(f"  {outcome:<17} {card.key:<36} {card.score or '':>5}  {card.reason}")


@click.command("recall")
@workspace_option("The repository checkout (workspace root).", required=True)
@click.option("--tool-json", help="A hook payload as a harness sends it (a file, or - for stdin).")
@click.option("--file", "file", help="Pretend a Read of this path.")
@click.option("--command", "command", help="Pretend a shell command.")
@click.option("--harness", type=click.Choice(sorted(HARNESS_NAMES)), help="Payload format.")
@click.option("--conversation", help="Skip cards this conversation already received.")
@click.option("--tokens", type=BoundedInt(1, 64_000), default=8_000, show_default=True,
              help="hookInjectionTokens budget.")  # fmt: skip
@store_json_command
def recall(
    workspace: Path,
    tool_json: str | None,
    file: str | None,
    command: str | None,
    harness: str | None,
    conversation: str | None,
    tokens: int,
    store: Path | None,
    as_json: bool,
) -> None:
    """Show what a tool call would receive from the store, with the match report."""
    root = str(workspace.resolve())
    call, session_id = _tool_call(tool_json, file, command, harness, root)
    key = repository_key(workspace)
    identity = RunIdentity("recall-cli", repository=key)
    with open_store(store, read_only=True) as opened:
        snapshot = opened.snapshot(SnapshotRequest(identity, repository=True, graph=False))
    config = ActiveMemoryConfig(graph=False, hook_injection_tokens=tokens)
    session = RecallSession(
        RecallIndex(snapshot.lessons, repository=key), WorkspaceRoot.at(workspace), config
    )
    chosen = conversation or session_id or "recall-cli"
    if conversation:
        ledger = Path(exposure_file(store_path(store), root, conversation))
        try:
            keys = (
                read_text(ledger, what=repr(str(ledger)), max_bytes=_MAX_LEDGER).split()
                if os.path.lexists(ledger)
                else []
            )
        except InputRefused as refused:
            fail(f"exposure ledger {refused}", EXIT_FAILED)
        session.ledger.mark_delivered(conversation, keys)
    result = session.recall(call, Caller("recall-cli", chosen))
    result.release()
    if as_json:
        emit_json({"repository": key, "generation": snapshot.generation, "text": result.text,
                   "report": result.report.to_dict()})  # fmt: skip
        return
    if result.text:
        click.echo(result.text)
        click.echo()
    click.echo(f"repository {key} (store generation {snapshot.generation})")
    _print_report(result.report)
