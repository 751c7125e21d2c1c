"""The finished local runs memory init may learn from, and every run it may not, with reasons.

Candidates are the harness sessions :func:`~active_memory.evidence.inventory.find_sessions`
finds (what ``active-memory sessions`` lists) and the run records saved in the state folder
(``<state>/runs/*/run.json``, where a host latches outcomes). Each session is converted into a
record inside the private session folder once, here, so every later call reads the same record.
A run is selected only when it is finished, readable, not opted out, not ignored and its
checkout proves the run's repository (:mod:`.identity`); every other run is an exclusion.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from active_memory.errors import ActiveMemoryError
from active_memory.evidence.inventory import find_sessions
from active_memory.evidence.inventory_scan import SPECIALIST_SESSION_REASON
from active_memory.evidence.sources import open_run_source
from active_memory.history_init.identity import Probes, aliases, prove_identity
from active_memory.history_init.state import Exclusion, RepositoryEntry, RunEntry
from active_memory.lanes import SPECIALIST_SESSION_MARKER
from active_memory.latch import read_latched_outcome
from active_memory.models.config import parse_runtime_config
from active_memory.models.runs import RUN_FILE, RunRecord, load_run_record
from active_memory.private_files import make_private_dir
from active_memory.store.paths import default_store_path

__all__ = ["Candidate", "Inventory", "candidates", "saved_runs_dir", "take_inventory"]

_FIRST_LINE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Candidate:
    source: str
    harness: str
    ended_ms: int
    problem: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Inventory:
    runs: tuple[RunEntry, ...]
    exclusions: tuple[Exclusion, ...]
    repositories: tuple[RepositoryEntry, ...]
    # Ignore values that matched no run's aliases or graph: most often a typo, said once.
    unmatched: tuple[str, ...] = ()


def candidates(roots: Mapping[str, Path] | None, saved_runs: Path | None) -> list[Candidate]:
    found: list[Candidate] = []
    for entry in find_sessions(roots):
        problem = None
        if not entry.reviewable:
            code = "unfinished" if (entry.reason or "").startswith("in progress") else "unreadable"
            if entry.reason == SPECIALIST_SESSION_REASON:
                code = "specialist_session"
            problem = (code, entry.reason or "not reviewable")
        found.append(Candidate(entry.path, entry.harness, entry.ended_ms or 0, problem))
    if saved_runs is not None and saved_runs.is_dir():
        for run_file in sorted(saved_runs.glob(f"*/{RUN_FILE}")):
            try:
                ended = int(run_file.stat().st_mtime * 1000)
            except OSError:
                continue
            found.append(Candidate(str(run_file), "record", ended))
    return found


def _key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _recorded_remote(candidate: Candidate) -> str | None:
    """A Codex session's recorded repository URL (its first line's ``git`` block), if any."""
    if candidate.harness != "codex":
        return None
    try:
        with open(candidate.source, "rb") as handle:
            first = json.loads(handle.readline(_FIRST_LINE_BYTES))
        url = first["payload"]["git"]["repository_url"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return url if isinstance(url, str) and url else None


def _load(candidate: Candidate, workdir: Path) -> RunRecord:
    if candidate.harness == "record":
        record = load_run_record(candidate.source)
        if record.outcome is None:
            outcome = read_latched_outcome(Path(candidate.source).parent)
            if outcome is None:
                raise _Unfinished()
            record = record.model_copy(update={"outcome": outcome})
        return record
    try:
        return open_run_source(candidate.source, workdir, candidate.harness)
    finally:
        _tighten(workdir)


def _tighten(folder: Path) -> None:
    """The converted record is as private as the session: the converter writes transcript
    copies with the default mode (evidence/sources), so they are made 0700/0600 here."""
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o700)
        for name in files:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), 0o600)
    if os.path.isdir(folder) and not os.path.islink(folder):
        os.chmod(folder, 0o700)


class _Unfinished(Exception):
    pass


def _excluded(
    candidate: Candidate,
    code: str,
    reason: str,
    run_id: str | None = None,
    names: Sequence[str] = (),
) -> Exclusion:
    return Exclusion(
        source=candidate.source, run_id=run_id, code=code, reason=reason, aliases=tuple(names)
    )


def _ignored(
    names: Sequence[str], graph: Sequence[str], repos: Sequence[str], graphs: Sequence[str]
) -> str | None:
    hit = next((value for value in repos if value in names), None)
    if hit is not None:
        return f"ignored by --ignore-repos {hit!r}"
    hit = next((value for value in graphs if value in graph), None)
    return None if hit is None else f"ignored by --ignore-graphs {hit!r}"


def take_inventory(
    found: Sequence[Candidate],
    session_dir: Path,
    ignore_repos: Sequence[str],
    ignore_graphs: Sequence[str],
) -> Inventory:
    probes = Probes()
    runs: list[RunEntry] = []
    exclusions: list[Exclusion] = []
    make_private_dir(session_dir / "runs")  # converted transcripts: private like the session
    matched: set[tuple[str, str]] = set()
    for candidate in found:
        if candidate.problem is not None:
            exclusions.append(_excluded(candidate, *candidate.problem))
            continue
        key = _key(candidate.source)
        record_dir = session_dir / "runs" / key
        try:
            record = _load(candidate, record_dir)
        except _Unfinished:
            exclusions.append(_excluded(candidate, "unfinished", "no outcome was latched"))
            continue
        except (ActiveMemoryError, OSError) as error:
            exclusions.append(_excluded(candidate, "unreadable", str(error).splitlines()[0]))
            continue
        try:
            enabled = parse_runtime_config(record.runtime).postmortem.enabled
        except ActiveMemoryError as error:
            exclusions.append(_excluded(candidate, "unreadable", str(error), record.run_id))
            continue
        if not enabled:
            exclusions.append(
                _excluded(
                    candidate, "opted_out", "its runtime disables the postmortem", record.run_id
                )
            )
            continue
        if (record.initial_input or "").startswith(SPECIALIST_SESSION_MARKER):
            # A harness lane's own session (agents/harness_lanes): reviewing it would learn
            # from a postmortem, not from work.
            reason = "it is a postmortem specialist's own session, run on a harness lane"
            exclusions.append(_excluded(candidate, "specialist_session", reason, record.run_id))
            continue
        checkout = record.checkout
        if checkout is None:
            exclusions.append(
                _excluded(candidate, "unproven_identity", "it records no workspace", record.run_id)
            )
            continue
        workspace = os.fspath(checkout.path)
        probe = probes.probe(workspace)
        root = probe.root or Path(workspace)
        names = aliases(root, probe.key) if probe.key else (root.name, str(root))
        graph = (record.graph.name, record.graph_hash)
        matched |= {("--ignore-repos", value) for value in ignore_repos if value in names}
        matched |= {("--ignore-graphs", value) for value in ignore_graphs if value in graph}
        ignored = _ignored(names, graph, ignore_repos, ignore_graphs)
        if ignored is not None:
            exclusions.append(_excluded(candidate, "ignored", ignored, record.run_id, names))
            continue
        if probe.code is not None:
            assert probe.reason is not None
            exclusions.append(_excluded(candidate, probe.code, probe.reason, record.run_id, names))
            continue
        recorded = None if candidate.harness != "record" else checkout.repository
        problem = prove_identity(probe, workspace, recorded, _recorded_remote(candidate))
        if problem is not None:
            exclusions.append(_excluded(candidate, *problem, record.run_id, names))
            continue
        assert probe.key is not None
        assert probe.root is not None
        folder = Path(candidate.source).parent if candidate.harness == "record" else record_dir
        runs.append(
            RunEntry(
                key=key,
                source=candidate.source,
                harness=candidate.harness,
                run_id=record.run_id,
                record_dir=str(folder),
                ended_ms=candidate.ended_ms,
                workspace=workspace,
                checkout=str(probe.root),
                repository=probe.key,
                aliases=names,
                graph_name=record.graph.name,
                graph_hash=record.graph_hash,
            )
        )
    unmatched = [
        f"{flag} {value!r}"
        for flag, values in (("--ignore-repos", ignore_repos), ("--ignore-graphs", ignore_graphs))
        for value in values
        if (flag, value) not in matched
    ]
    return Inventory(tuple(runs), tuple(exclusions), _repositories(runs, probes), tuple(unmatched))


def _repositories(runs: Sequence[RunEntry], probes: Probes) -> tuple[RepositoryEntry, ...]:
    """Each repository's newest selected run supplies its checkout for maintenance."""
    newest: dict[str, RunEntry] = {}
    for run in runs:
        best = newest.get(run.repository)
        if best is None or (run.ended_ms, run.key) > (best.ended_ms, best.key):
            newest[run.repository] = run
    entries = []
    for key, run in sorted(newest.items()):
        probe = probes.probe(run.checkout)
        assert probe.fingerprint is not None
        assert probe.state is not None
        entries.append(
            RepositoryEntry(
                repository=key,
                checkout=run.checkout,
                newest_run=run.key,
                aliases=run.aliases,
                head=probe.state.head,
                fingerprint=probe.fingerprint,
            )
        )
    return tuple(entries)


def saved_runs_dir() -> Path:
    """Where saved run records live: ``<state>/runs`` beside the default store."""
    return default_store_path().parent / "runs"
