"""The learn folder: the queue, each session's state, the postmortem ledger and the settings.

It sits beside the store it publishes to (``<store's folder>/learn/``), private (0700):

* ``queue/<key>.json``: entries the session-end hook wrote (:mod:`.session_end`), one per
  session file; the worker takes each into its session's state;
* ``sessions/<key>.json``: one :class:`SessionState` per session: queued, running, done,
  skipped or failed, with the reason and the lessons changed;
* ``postmortems.jsonl``: one line per postmortem started (its day and the session's content
  digest), which the daily cap counts, and one per postmortem completed: a content completed
  is never reviewed again (one that failed may be, when queued again);
* ``config.json``: :class:`LearnConfig` (``learn config``);
* ``worker.lock``: held by the one worker running; ``worker.log``: the detached worker's output.

Every file is written aside and renamed into place, so a reader sees a whole one or none.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from active_memory.bounded_input import read_text
from active_memory.errors import ActiveMemoryError, ConfigError
from active_memory.learn import session_end
from active_memory.models.base import Model
from active_memory.private_files import make_private_dir, write_private_text

__all__ = [
    "DEFAULT_DAILY_CAP",
    "DEFAULT_SETTLE_SECONDS",
    "LearnConfig",
    "LearnFolder",
    "LessonTouched",
    "QueueEntry",
    "SessionState",
    "State",
    "learn_folder",
    "learn_status",
]

State = Literal["queued", "running", "done", "skipped", "failed"]
DEFAULT_DAILY_CAP = 20
DEFAULT_SETTLE_SECONDS = 10.0
_MAX_STATE_BYTES = 1024 * 1024
_MAX_LEDGER_BYTES = 16 * 1024 * 1024


class LearnConfig(Model):
    """What ``learn config`` sets: the postmortems a day (0: learning paused), how long a
    session file must stay unchanged before it is reviewed, and the repositories never queued
    (matched as ``memory init --ignore-repos`` matches them)."""

    daily_cap: Annotated[int, Field(ge=0, le=10_000)] = DEFAULT_DAILY_CAP
    settle_seconds: Annotated[float, Field(ge=0, le=86_400)] = DEFAULT_SETTLE_SECONDS
    ignore_repos: tuple[str, ...] = ()


class QueueEntry(Model):
    """One entry the session-end hook wrote (the hook writes it by hand: these are its keys)."""

    harness: str
    session_file: str
    session_id: str | None = None
    cwd: str | None = None
    end_reason: str | None = None
    queued_ms: int


class LessonTouched(Model):
    """A lesson a postmortem changed: ``op`` is the store's (upsert or retire)."""

    id: str
    op: str
    title: str | None = None


class SessionState(QueueEntry):
    """Where one queued session stands: its queue entry, the ``key`` of its file and what
    became of it. ``code`` names a skip or failure kind
    (``duplicate``, ``specialist_session``, ``excluded_repo``, ``not_settled``,
    ``session_unreadable``, ``harness_logged_out``…), or ``daily_cap`` on a session the cap
    left queued; ``reason`` says it in a sentence; ``lessons`` are the changes a done
    postmortem published."""

    key: str
    state: State
    code: str | None = None
    reason: str | None = None
    digest: str | None = None
    run_id: str | None = None
    lessons: tuple[LessonTouched, ...] = ()
    updated_ms: int


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class LearnFolder:
    """The learn folder at ``path``; nothing is created until something is written."""

    path: Path

    @property
    def queue(self) -> Path:
        return self.path / session_end.QUEUE_FOLDER

    @property
    def sessions(self) -> Path:
        return self.path / session_end.SESSIONS_FOLDER

    @property
    def ledger(self) -> Path:
        return self.path / "postmortems.jsonl"

    @property
    def config_file(self) -> Path:
        return self.path / session_end.CONFIG_FILE

    @property
    def lock(self) -> Path:
        return self.path / "worker.lock"

    @property
    def log(self) -> Path:
        return self.path / session_end.WORKER_LOG

    def make(self) -> None:
        for folder in (self.path, self.queue, self.sessions):
            make_private_dir(folder)

    # settings

    def config(self) -> LearnConfig:
        """The settings (defaults when none were set); ConfigError naming the file when it
        cannot be read."""
        if not self.config_file.exists():
            return LearnConfig()
        try:
            text = read_text(
                self.config_file,
                what=repr(str(self.config_file)),
                max_bytes=session_end.MAX_CONFIG_BYTES,
            )
            return LearnConfig.parse_json(text)
        except (ActiveMemoryError, ValueError) as error:
            raise ConfigError(
                "learn config", f"{error}; set it again with `active-memory learn config`"
            ) from None

    def save_config(self, config: LearnConfig) -> None:
        self.make()
        write_private_text(self.config_file, config.model_dump_json(indent=2) + "\n")

    # the queue

    def take_queue(self) -> list[tuple[str, QueueEntry | None]]:
        """Every queue entry, read and removed, by key (None: an entry that cannot be read);
        oldest first."""
        if not self.queue.is_dir():
            return []
        taken: list[tuple[str, QueueEntry | None]] = []
        names = sorted(self.queue.glob("*" + session_end.ENTRY_SUFFIX))
        for path in names:
            key = path.name.removesuffix(session_end.ENTRY_SUFFIX)
            taken.append((key, _read_entry(path)))
            path.unlink(missing_ok=True)
        return taken

    def queued_entries(self) -> list[tuple[str, QueueEntry]]:
        """The queue entries no worker has taken yet (read only)."""
        if not self.queue.is_dir():
            return []
        found = []
        for path in sorted(self.queue.glob("*" + session_end.ENTRY_SUFFIX)):
            entry = _read_entry(path)
            if entry is not None:
                found.append((path.name.removesuffix(session_end.ENTRY_SUFFIX), entry))
        return found

    # session states

    def state(self, key: str) -> SessionState | None:
        path = self.sessions / f"{key}.json"
        try:
            text = read_text(path, what=repr(str(path)), max_bytes=_MAX_STATE_BYTES)
            return SessionState.parse_json(text)
        except (ActiveMemoryError, ValueError):
            return None

    def states(self) -> list[SessionState]:
        """Every session's state, latest change first."""
        if not self.sessions.is_dir():
            return []
        found = [self.state(path.stem) for path in self.sessions.glob("*.json")]
        return sorted((s for s in found if s is not None), key=_newest_first)

    def put(self, current: SessionState, /, **changes: object) -> SessionState:
        """Write ``current`` with ``changes`` (and a new ``updated_ms``); the state written."""
        self.make()
        written = current.model_copy(update={**changes, "updated_ms": _now_ms()})
        text = written.model_dump_json()
        SessionState.parse_json(text)  # the changes are checked too
        write_private_text(self.sessions / f"{written.key}.json", text + "\n")
        return written

    def forget_title(self, lesson_id: str) -> bool:
        """Drop the title of ``lesson_id`` from every session state that keeps it, each state
        otherwise as it was (its ``updated_ms`` too: ``learn status`` keeps its order); whether
        none is left. A purge calls it: the title is the lesson's text."""
        if not self.sessions.is_dir():
            return True
        whole = True
        for path in self.sessions.glob("*.json"):
            state = self.state(path.stem)
            if state is None or not any(
                touched.id == lesson_id and touched.title is not None for touched in state.lessons
            ):
                continue
            lessons = tuple(
                touched.model_copy(update={"title": None}) if touched.id == lesson_id else touched
                for touched in state.lessons
            )
            text = state.model_copy(update={"lessons": lessons}).model_dump_json()
            try:
                write_private_text(path, text + "\n")
            except OSError:
                whole = False
        return whole

    # the ledger of postmortems started

    def ledger_lines(self) -> list[dict[str, object]]:
        if not self.ledger.exists():
            return []
        text = read_text(self.ledger, what=repr(str(self.ledger)), max_bytes=_MAX_LEDGER_BYTES)
        lines = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    lines.append(value)
        return lines

    def reviewed(self, digest: str) -> bool:
        """Whether a postmortem of this content completed (a failed one may run again)."""
        return any(
            line.get("digest") == digest and line.get("event") == "done"
            for line in self.ledger_lines()
        )

    def started_on(self, day: str) -> int:
        return sum(
            1
            for line in self.ledger_lines()
            if line.get("event") == "start" and line.get("day") == day
        )

    def record_start(self, digest: str, key: str, day: str) -> None:
        self._append({"event": "start", "day": day, "digest": digest, "key": key})

    def record_done(self, digest: str, key: str) -> None:
        self._append({"event": "done", "digest": digest, "key": key})

    def _append(self, entry: dict[str, object]) -> None:
        self.make()
        line = json.dumps({**entry, "ms": _now_ms()})
        descriptor = os.open(self.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, (line + "\n").encode("utf-8"))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _read_entry(path: Path) -> QueueEntry | None:
    try:
        text = read_text(path, what=repr(str(path)), max_bytes=session_end.MAX_PAYLOAD_BYTES)
        return QueueEntry.parse_json(text)
    except (ActiveMemoryError, ValueError):
        return None


def learn_status(folder: LearnFolder) -> list[SessionState]:
    """Every session, newest change first: the states the worker keeps, and the queue entries
    no worker has taken yet (shown as queued)."""
    states = folder.states()
    taken = {state.key for state in states}
    for key, entry in folder.queued_entries():
        if key not in taken:
            states.append(
                SessionState(
                    key=key, state="queued", updated_ms=entry.queued_ms, **entry.model_dump()
                )
            )
    return sorted(states, key=_newest_first)


def _newest_first(state: SessionState) -> tuple[int, int, str]:
    return (-state.updated_ms, -state.queued_ms, state.session_file)


def learn_folder(store: Path) -> LearnFolder:
    """The learn folder of the store at ``store``: ``learn/`` beside it."""
    return LearnFolder(Path(os.path.abspath(store)).parent / "learn")
